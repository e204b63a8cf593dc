"""Real clients sign in over OAuth against live daphne: the official Python SDK's OAuth client.

The example project with ``DJANGO_MCP_OAUTH=1`` is its own authorization server (django-oauth-toolkit):
the SDK discovers it from the endpoint's 401, registers (dynamic client registration), signs in
through Django's login view and the consent page (the client script plays the browser), gets a
token for the endpoint, calls tools as the user and runs a task, in both eras. The test project
(``tests.settings``, ``/mcp-oauth``) serves client ID metadata documents of its own to show CIMD.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.live.clients import install
from tests.live.servers import ROOT, migrate, server_process
from tests.live.test_clients import assert_passed, run_client

pytestmark = [pytest.mark.live, pytest.mark.timeout(600)]

CLIENTS = Path(__file__).resolve().parent / "clients"
RENDERED = "Rendered 'x' (2 frames)."


@pytest.fixture(scope="module")
def python_sdk() -> str:
    try:
        return install.install_all()["python-sdk"].path
    except install.InstallError as exc:
        pytest.fail(f"the MCP clients could not be installed: {exc}", pytrace=False)


def _signed_in_daphne(settings: str, database: Path, **env: str) -> Iterator[str]:
    env = {
        "DJANGO_SETTINGS_MODULE": settings,
        "DJANGO_MCP_DATABASE": "sqlite",
        "DJANGO_MCP_SQLITE": str(database),
        "DJANGO_MCP_TEST_SQLITE": str(database),
        **env,
    }
    migrate(env)
    subprocess.run(  # noqa: S603 - Django's own command, as the example project's docs say
        [sys.executable, "-m", "django", "createsuperuser", "--noinput", "--username", "demo", "--email", "d@x.org"],
        cwd=ROOT,
        env={**os.environ, **env, "DJANGO_SUPERUSER_PASSWORD": "demo-pw"},
        check=True,
        timeout=60,
    )
    with server_process(
        [
            "-m",
            "daphne",
            "-b",
            "127.0.0.1",
            "-p",
            "{port}",
            "example_project.asgi:application" if settings.startswith("example") else "tests.asgi:application",
        ],
        env=env,
        ready_path="/.well-known/oauth-protected-resource",
    ) as base:
        yield base


@pytest.fixture(scope="module")
def example_oauth(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    yield from _signed_in_daphne(
        "example_project.settings", tmp_path_factory.mktemp("oauth") / "db.sqlite3", DJANGO_MCP_OAUTH="1"
    )


@pytest.fixture(scope="module")
def tests_oauth(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    yield from _signed_in_daphne("tests.settings", tmp_path_factory.mktemp("oauth-tests") / "db.sqlite3")


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_python_sdk_registers_signs_in_and_calls_tools_and_a_task(python_sdk, example_oauth, mode):
    summary = run_client(
        [
            python_sdk,
            str(CLIENTS / "py_oauth_client.py"),
            example_oauth + "/mcp",
            "--username",
            "demo",
            "--password",
            "demo-pw",
            "--mode",
            mode,
        ]
    )
    assert_passed(summary)
    assert summary["signed_in_at"] == "/o/login/" and summary["consented_at"] == "/o/authorize/"
    assert summary["registered_as"] and summary["scope"] == "mcp"
    assert summary["whoami"] == "demo" and summary["echo"] == "hi"
    assert summary["task"] == {"status": "completed", "text": RENDERED}


def test_python_sdk_signs_in_with_a_client_id_metadata_document(python_sdk, tests_oauth):
    summary = run_client(
        [
            python_sdk,
            str(CLIENTS / "py_oauth_client.py"),
            tests_oauth + "/mcp-oauth",
            "--username",
            "demo",
            "--password",
            "demo-pw",
            "--cimd",
            "https://client.example/mcp-test-client",
        ]
    )
    assert_passed(summary)
    assert summary["registered_as"] == "https://client.example/mcp-test-client"  # no registration request
    assert summary["whoami"] == "demo" and summary["task"] == {"status": "completed", "text": RENDERED}
