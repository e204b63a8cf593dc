"""docs/sign-in.md as written: its Python compiles and imports what exists, its tables name the real
settings and checks, its settings block is what the tests run on."""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

from django_mcp.auth.conf import AuthSettings, JwtSettings

DOC = Path(__file__).resolve().parents[2] / "docs" / "sign-in.md"
TEXT = DOC.read_text(encoding="utf-8")


def python_blocks() -> list[str]:
    return re.findall(r"^```python\n(.*?)\n```$", TEXT, re.M | re.S)


def test_every_python_block_compiles_and_imports_names_that_exist():
    assert len(python_blocks()) >= 4
    for code in python_blocks():
        tree = ast.parse(code)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                module = importlib.import_module(node.module)
                for alias in node.names:
                    assert hasattr(module, alias.name), f"{node.module} has no {alias.name}"


def test_the_settings_table_names_every_sign_in_key_and_no_other():
    table = section("## Settings")
    named = set(re.findall(r"^\| `([A-Z_]+)` \|", table, re.M))
    assert named == set(AuthSettings.model_fields)
    for key in JwtSettings.model_fields:
        assert f"`{key}`" in table, key


def test_the_checks_table_names_every_sign_in_check():
    source = (Path(__file__).resolve().parents[2] / "django_mcp" / "auth" / "checks.py").read_text()
    ids = set(re.findall(r'"(?:django_mcp\.)?([EW]0\d\d)"', source))  # id="django_mcp.E010", or a code
    documented = set(re.findall(r"`django_mcp\.([EWI]\d{3})`", section("## Checks")))
    assert ids and ids == documented


def test_the_documented_include_and_settings_helper_are_the_ones_the_tests_use():
    from django.conf import settings

    from django_mcp.auth import authorization_server_settings

    shown = authorization_server_settings({"mcp": "Use this site's MCP tools"})
    assert {k: v for k, v in settings.OAUTH2_PROVIDER.items() if k not in ("SCOPES", "DEFAULT_SCOPES")} == {
        **{k: v for k, v in shown.items() if k not in ("SCOPES", "DEFAULT_SCOPES")},
        "CIMD_METADATA_FETCHER": "tests.oauth.LoopbackMetadataFetcher",
    }
    assert 'path("", include("django_mcp.auth.urls"))' in TEXT


def section(heading: str) -> str:
    start = TEXT.index(heading + "\n")
    end = TEXT.find("\n## ", start + len(heading))
    return TEXT[start : end if end != -1 else len(TEXT)]
