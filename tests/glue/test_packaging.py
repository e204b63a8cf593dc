"""The wheel and the sdist: built, ``twine check`` clean, holding what a project needs; the README's extras exist.

The Quick start (``tests/docs/test_quickstart.py``) runs from this wheel, installed into a fresh venv.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from pathlib import Path

import pytest

from tests.packaging import ROOT, build

pytestmark = [pytest.mark.live, pytest.mark.timeout(900)]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return build(tmp_path_factory.mktemp("dist"))


def test_twine_check_passes(built):
    proc = subprocess.run(
        [sys.executable, "-m", "twine", "check", "--strict", *map(str, built)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.count("PASSED") == 2


def test_the_wheel_holds_the_package_data(built):
    wheel, _ = built
    names = set(zipfile.ZipFile(wheel).namelist())
    package = {n for n in (ROOT / "django_mcp").rglob("*") if n.is_file() and "__pycache__" not in n.parts}
    expected = {str(n.relative_to(ROOT)) for n in package}
    assert expected <= names, sorted(expected - names)  # every module, migration, template and py.typed
    assert "django_mcp/py.typed" in names
    assert "django_mcp/templates/admin/django_mcp/task/change_form.html" in names
    assert not [n for n in names if n.startswith(("tests/", "example_project/", "bench/"))]
    assert any(n.endswith("licenses/LICENSE") for n in names)


def test_the_sdist_builds_the_same_package(built):
    _, sdist = built
    with tarfile.open(sdist) as archive:
        names = {n.split("/", 1)[1] for n in archive.getnames() if "/" in n}
    assert {"pyproject.toml", "README.md", "LICENSE", "django_mcp/py.typed"} <= names
    assert "django_mcp/templates/admin/django_mcp/task/change_form.html" in names


def docs_text() -> str:
    """The README and every page of ``docs/``."""
    return "\n".join(
        page.read_text(encoding="utf-8") for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    )


def extras_named_in_docs() -> set[str]:
    text = docs_text()
    named: set[str] = set()
    for brackets in re.findall(r"(?:django-mcp(?:-endpoint)?|\.)\[([a-z,]+)\]", text):
        named.update(brackets.split(","))
    named.update(re.findall(r"the `([a-z]+)` extra", text))
    return named


def test_every_extra_the_docs_name_exists():
    extras = set(
        tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    )
    named = extras_named_in_docs()
    assert {"postgres", "redis", "fleet", "uvicorn"} <= named  # the finder finds them
    assert named <= extras, named - extras


def test_no_install_line_names_an_unpublished_distribution():
    text = docs_text()
    for line in re.findall(r"pip install[^\n`]*", text):
        if " @" in line:
            continue  # a direct reference (git URL) names the distribution it builds
        assert not re.search(r"pip install \"?django-mcp-endpoint(\[|\"|\s|$)", line), line
