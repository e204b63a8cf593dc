"""ARCHITECTURE.md against the code: every module, folder and name it cites exists."""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "django_mcp"
IDENTIFIER = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")

# Names of Django, Python, the MCP schema and other libraries the document cites beside ours.
FOREIGN = {
    "ATOMIC_REQUESTS",
    "DELETE",
    "GET",
    "HttpRequest",
    "LoginRequiredMiddleware",
    "Protocol",
    "RedisCache",
    "TYPE_CHECKING",
    "CallToolResult",
    "_meta",
    "acyclic_siblings",
    "psycopg_pool.AsyncConnectionPool",
    "redis.asyncio",
    "setting_changed",
}


@cache
def defined_in(path: Path) -> frozenset[str]:
    """Every name a module defines or sets (functions, classes, attributes, keywords) and its string constants."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Name | ast.arg):
            names.add(node.id if isinstance(node, ast.Name) else node.arg)
        elif isinstance(node, ast.Attribute):
            names.add(node.attr)
        elif isinstance(node, ast.keyword) and node.arg:
            names.add(node.arg)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            names.add(node.value)
    return frozenset(names)


def sources(under: Path) -> list[Path]:
    return sorted(under.rglob("*.py"))


def everywhere() -> set[str]:
    names: set[str] = set()
    for path in sources(PACKAGE):
        names |= defined_in(path)
        names.add(path.stem)
        names.update(part for part in path.relative_to(PACKAGE).parts[:-1])
    return names


def find(relative: str) -> Path | None:
    """``relative`` (a file or folder) under the package, the tests or the top level."""
    for base in (PACKAGE, ROOT):
        if (base / relative).exists():
            return base / relative
    matches = [p for p in PACKAGE.rglob(relative.rstrip("/")) if p.as_posix().endswith(relative.rstrip("/"))]
    return matches[0] if matches else None


def unresolved(cited: str, known: set[str]) -> str | None:
    """Why ``cited`` names nothing in the code, or None when it does."""
    cited = re.sub(r"\(.*\)$", "", cited).removeprefix("@")
    if cited in FOREIGN or cited in known or not cited or any(c in cited for c in " [*"):
        return None
    if "/" not in cited and not cited.endswith((".py", ".toml")):
        if IDENTIFIER.fullmatch(cited):
            missing = [part for part in cited.split(".") if part not in known]
            return f"{missing} not in the package" if missing else None
        return None if cited in known or cited in (ROOT / "pyproject.toml").read_text() else "not in the code"
    path, _, names = cited.partition("::")
    if not names and not path.endswith(("/", ".py", ".toml")):  # server/dispatch.Dispatcher.adispatch
        path, _, names = path.partition(".")
        path += ".py"
    target = find(path) or (find(path.removesuffix(".py") + "/") if path.endswith(".py") else None)
    if target is None:
        return None if cited in known else f"no {path}"  # known: a method name such as tasks/get
    files = [target] if target.is_file() else sources(target)
    missing = [n for n in names.split(".") if n and not any(n in defined_in(f) for f in files)]
    return f"{missing} not in {target.relative_to(ROOT)}" if missing else None


def test_every_module_and_name_architecture_md_cites_exists():
    known = everywhere()
    cited = set(re.findall(r"`([^`\n]+)`", (ROOT / "ARCHITECTURE.md").read_text()))
    stale = {c: why for c in sorted(cited) if (why := unresolved(c, known))}
    assert not stale, stale


def test_a_name_that_is_gone_is_reported():
    known = everywhere()
    assert unresolved("TaskStore.afinish", known) is None
    assert unresolved("tasks/store/task_store.TaskStore.avisible", known) is None
    assert unresolved("server/listen/", known) is None
    assert unresolved("TaskStore.afinished_nowhere", known) is not None
    assert unresolved("server/dispatch.Dispatcher.adispatch_gone", known) is not None
    assert unresolved("server/gone.py", known) is not None
    assert unresolved("tests/servers.py::EchoExtension", known) is None
    assert unresolved("tests/servers.py::NoSuchExtension", known) is not None
