"""The layout is the architecture: imports may not cross the lines ARCHITECTURE.md draws."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "django_mcp"
GLUE_NAMING_TASKS = {
    "apps.py",
    "models.py",
    "admin.py",
    "health.py",  # readiness: the tasks' database and the worker fleet
    "management/commands/mcp_clear_tasks.py",
}


def resolved(node: ast.ImportFrom, package: str) -> str:
    """The absolute name of the module ``node`` imports from (a relative import resolved against ``package``)."""
    if not node.level:
        return node.module or ""
    base = package.split(".")[: len(package.split(".")) - node.level + 1]
    return ".".join([*base, node.module] if node.module else base)


def imported_modules(path: Path) -> set[str]:
    """Absolute names of every module ``path`` imports (relative imports resolved)."""
    package = ".".join(("django_mcp", *path.relative_to(PACKAGE).parent.parts))
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            module = resolved(node, package)
            names.add(module)
            names.update(f"{module}.{alias.name}" for alias in node.names)
    return names


def modules_in(room: str) -> list[Path]:
    return sorted((PACKAGE / room).rglob("*.py"))


@pytest.mark.parametrize("path", modules_in("protocol"), ids=lambda p: p.name)
def test_the_protocol_package_never_imports_django(path):
    django = {m for m in imported_modules(path) if m == "django" or m.startswith(("django.", "channels", "ninja"))}
    assert not django, f"{path.name} imports {sorted(django)}"


CORE = [*modules_in("server"), PACKAGE / "conf.py", PACKAGE / "checks.py", PACKAGE / "endpoint.py"]


@pytest.mark.parametrize("path", CORE, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_the_core_never_imports_the_tasks_room(path):
    tasks = {m for m in imported_modules(path) if m.startswith("django_mcp.tasks")}
    assert not tasks, f"{path.name} imports {sorted(tasks)}"


@pytest.mark.parametrize("path", modules_in("server"), ids=lambda p: p.name)
def test_the_dispatch_core_never_imports_the_view_or_the_glue(path):
    glue = {"django_mcp.transport", "django_mcp.endpoint", "django_mcp.urls", "django_mcp.admin", "django_mcp.models"}
    crossing = {m for m in imported_modules(path) if m in glue or any(m.startswith(g + ".") for g in glue)}
    assert not crossing, f"{path.name} imports {sorted(crossing)}"


@pytest.mark.parametrize("path", [*modules_in("protocol"), *modules_in("server")], ids=lambda p: p.name)
def test_the_protocol_and_the_dispatch_core_never_import_sign_in(path):
    # Scopes reach the core as a duck type (a principal's ``scopes`` and ``insufficient_scope``).
    crossing = {m for m in imported_modules(path) if m.startswith("django_mcp.auth")}
    assert not crossing, f"{path.name} imports {sorted(crossing)}"


@pytest.mark.parametrize("path", modules_in("auth"), ids=lambda p: p.name)
def test_sign_in_never_imports_the_tasks_room_or_the_view(path):
    crossing = {m for m in imported_modules(path) if m.startswith(("django_mcp.tasks", "django_mcp.transport"))}
    assert not crossing, f"{path.name} imports {sorted(crossing)}"


def test_only_the_glue_files_name_the_tasks_room():
    naming = set()
    for path in PACKAGE.rglob("*.py"):
        relative = path.relative_to(PACKAGE)
        if relative.parts[0] == "tasks" or relative.parts[0] == "migrations":
            continue
        if any(m.startswith("django_mcp.tasks") for m in imported_modules(path)):
            naming.add(relative.as_posix())
    assert naming <= GLUE_NAMING_TASKS, sorted(naming - GLUE_NAMING_TASKS)


def test_the_checker_sees_a_crossing():
    # The test above must be able to fail: a relative import of the tasks room is resolved.
    sample = PACKAGE / "admin.py"
    assert any(m.startswith("django_mcp.tasks") for m in imported_modules(sample))


@pytest.mark.parametrize("path", modules_in("transport"), ids=lambda p: p.name)
def test_the_transport_never_imports_the_tasks_room_or_the_glue(path):
    # The endpoint is named for types only (under TYPE_CHECKING): it builds the view, not the reverse.
    crossing = {
        m
        for m in runtime_imports(path)
        if m.startswith(("django_mcp.tasks", "django_mcp.endpoint", "django_mcp.urls", "django_mcp.admin"))
    }
    assert not crossing, f"{path.name} imports {sorted(crossing)}"


@pytest.mark.parametrize("path", modules_in("publish"), ids=lambda p: p.name)
def test_publishing_builds_on_the_core_only(path):
    # Published tools are tool definitions like any other: no front, no extension, no glue.
    crossing = {
        m
        for m in imported_modules(path)
        if m.startswith(("django_mcp.tasks", "django_mcp.transport", "django_mcp.endpoint", "django_mcp.auth"))
        or m in ("django_mcp.urls", "django_mcp.admin", "django_mcp.models")
    }
    assert not crossing, f"{path.name} imports {sorted(crossing)}"


def runtime_imports(path: Path) -> set[str]:
    """The django_mcp modules ``path`` imports when it is imported (module level, not under TYPE_CHECKING)."""
    module = module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    names: set[str] = set()
    for statement in ast.parse(path.read_text()).body:
        if isinstance(statement, ast.If) and "TYPE_CHECKING" in ast.unparse(statement.test):
            continue
        for node in ast.walk(statement) if isinstance(statement, ast.If | ast.Try) else [statement]:
            if isinstance(node, ast.ImportFrom):
                imported = resolved(node, package)
                submodules = {f"{imported}.{alias.name}" for alias in node.names} & ALL_MODULES
                names.update(submodules or ({imported} & ALL_MODULES))
            elif isinstance(node, ast.Import):
                names.update({alias.name for alias in node.names} & ALL_MODULES)
    return names


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


ALL_MODULES = {module_name(p) for p in PACKAGE.rglob("*.py") if "migrations" not in p.parts}


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for imported in graph.get(module, ()):
            if imported not in index:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in stack:
                low[module] = min(low[module], index[imported])
        if low[module] == index[module]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == module:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return cycles


def test_no_module_imports_itself_back_through_others():
    graph = {module_name(p): runtime_imports(p) for p in PACKAGE.rglob("*.py") if "migrations" not in p.parts}
    assert import_cycles(graph) == []


def test_the_cycle_finder_sees_a_cycle():
    assert import_cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_module_imports_another_modules_private_names():
    private = []
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith("django_mcp")):
                private += [
                    f"{path.relative_to(PACKAGE)}: {alias.name}"
                    for alias in node.names
                    if alias.name.startswith("_") and not alias.name.startswith("__")
                ]
    assert private == []


@pytest.mark.parametrize("path", modules_in("tasks"), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_the_tasks_room_never_imports_the_glue_or_the_transport(path):
    glue = ("django_mcp.endpoint", "django_mcp.urls", "django_mcp.transport", "django_mcp.auth", "django_mcp.audit")
    crossing = {m for m in imported_modules(path) if m.startswith(glue)}
    assert not crossing, f"{path.name} imports {sorted(crossing)}"


@pytest.mark.parametrize(
    "path", [p for p in PACKAGE.rglob("*.py") if "migrations" not in p.parts], ids=lambda p: str(p.relative_to(PACKAGE))
)
def test_no_module_is_over_500_lines(path):
    assert len(path.read_text().splitlines()) <= 500


def test_no_test_module_imports_another():
    tests = PACKAGE.parent / "tests"
    crossing = []
    for path in tests.rglob("test_*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.rpartition(".")[2].startswith("test_"):
                crossing.append(f"{path.relative_to(tests)}: {node.module}")
    assert crossing == [], "shared helpers belong in helper modules or fixtures"


def test_only_the_store_queries_the_tasks_table():
    """One door into the tasks table (ARCHITECTURE.md): a model change is carried through tasks/store/ alone."""
    manager = re.compile(r"\bTask\.(objects|_default_manager|_base_manager)\b")
    outside = [
        f"{path.relative_to(PACKAGE)}:{number}"
        for path in PACKAGE.rglob("*.py")
        if "migrations" not in path.parts and path.parent.name != "store"
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if manager.search(line)
    ]
    assert outside == []
