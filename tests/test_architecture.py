"""The layout is the architecture: imports may not cross the lines ARCHITECTURE.md draws."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "django_mcp"
GLUE_NAMING_TASKS = {
    "apps.py",
    "models.py",
    "admin.py",
    "health.py",  # readiness: the tasks' database and the worker fleet
    "management/commands/mcp_clear_tasks.py",
}


def imported_modules(path: Path) -> set[str]:
    """Absolute names of every module ``path`` imports (relative imports resolved)."""
    package = ".".join(("django_mcp", *path.relative_to(PACKAGE).parent.parts))
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join([*base, node.module] if node.module else base)
            else:
                module = node.module or ""
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
    glue = {"django_mcp.views", "django_mcp.endpoint", "django_mcp.urls", "django_mcp.admin", "django_mcp.models"}
    crossing = {m for m in imported_modules(path) if m in glue or any(m.startswith(g + ".") for g in glue)}
    assert not crossing, f"{path.name} imports {sorted(crossing)}"


@pytest.mark.parametrize("path", [*modules_in("protocol"), *modules_in("server")], ids=lambda p: p.name)
def test_the_protocol_and_the_dispatch_core_never_import_sign_in(path):
    # Scopes reach the core as a duck type (a principal's ``scopes`` and ``insufficient_scope``).
    crossing = {m for m in imported_modules(path) if m.startswith("django_mcp.auth")}
    assert not crossing, f"{path.name} imports {sorted(crossing)}"


@pytest.mark.parametrize("path", modules_in("auth"), ids=lambda p: p.name)
def test_sign_in_never_imports_the_tasks_room_or_the_view(path):
    crossing = {m for m in imported_modules(path) if m.startswith(("django_mcp.tasks", "django_mcp.views"))}
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
