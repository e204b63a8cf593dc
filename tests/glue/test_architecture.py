"""The layout is the architecture: imports may not cross the lines ARCHITECTURE.md draws.

The lines themselves are import-linter contracts in pyproject.toml; this runs them, and keeps what
no import contract can say.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "django_mcp"


def lint_imports(*config: str) -> subprocess.CompletedProcess[str]:
    command = [str(Path(sys.executable).with_name("lint-imports")), "--no-cache", *config]
    return subprocess.run(command, cwd=PACKAGE.parent, capture_output=True, text=True, timeout=120)


def test_the_import_contracts_are_kept():
    """pyproject.toml's import-linter contracts: the rooms' lines (ARCHITECTURE.md), one door, no loop."""
    linted = lint_imports()
    assert linted.returncode == 0, linted.stdout + linted.stderr
    assert "0 broken" in linted.stdout


def test_a_contract_that_an_import_crosses_is_broken(tmp_path):
    # The contracts must be able to fail: the tasks room does import the dispatch core.
    config = tmp_path / "crossing.toml"
    config.write_text(
        '[tool.importlinter]\nroot_package = "django_mcp"\n\n[[tool.importlinter.contracts]]\n'
        'name = "tasks never imports server"\ntype = "forbidden"\nsource_modules = ["django_mcp.tasks"]\n'
        'forbidden_modules = ["django_mcp.server"]\n'
    )
    linted = lint_imports(str(config))
    assert linted.returncode != 0 and "tasks never imports server BROKEN" in linted.stdout, linted.stdout


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


def imports_inside_functions_without_a_reason(source: str) -> list[int]:
    """Line numbers of imports inside functions with no comment on their line or above their group."""
    lines = source.splitlines()
    unexplained = []
    for function in ast.walk(ast.parse(source)):
        if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for node in ast.walk(function):
            if not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            first = node.lineno - 1  # the group of imports this one ends, read upwards
            while first > 0 and lines[first - 1].strip().startswith(("import ", "from ")):
                first -= 1
            group = lines[first : node.end_lineno]
            if not any("#" in line for line in group) and not lines[first - 1].strip().startswith("#"):
                unexplained.append(node.lineno)
    return unexplained


def test_an_import_inside_a_function_says_why():
    """Imports sit at the top, but for an optional extra or what needs the app registry: each says which."""
    found = [
        f"{path.relative_to(PACKAGE)}:{number}"
        for path in PACKAGE.rglob("*.py")
        if "migrations" not in path.parts
        for number in imports_inside_functions_without_a_reason(path.read_text())
    ]
    assert found == []


def test_an_unexplained_import_inside_a_function_is_found():
    source = "def f():\n    x = 1\n    import json\n\n    # optional\n    import yaml\n    import toml\n"
    assert imports_inside_functions_without_a_reason(source) == [3]
