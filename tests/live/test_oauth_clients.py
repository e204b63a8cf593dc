"""Real clients sign in over OAuth against live daphne: the official Python and TypeScript SDKs' OAuth clients.

The example project with ``DJANGO_MCP_OAUTH=1`` is its own authorization server (django-oauth-toolkit):
the SDK discovers it from the endpoint's 401, registers (dynamic client registration), signs in
through Django's login view and the consent page (the client script plays the browser), gets a
token for the endpoint, calls tools as the user and runs a task, in both eras; the TypeScript SDK 1.x
does the same in the handshake era; the official conformance suite's ``authorization`` command judges
the authorization server. The test project
(``tests.settings``, ``/mcp-oauth``) serves client ID metadata documents of its own to show CIMD.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.conformance import runner
from tests.live.browser import sign_in_and_allow
from tests.live.clients import install
from tests.live.clients.summary import assert_passed, run_client
from tests.live.servers import ROOT, migrate, server_process

pytestmark = [
    pytest.mark.live,
    pytest.mark.timeout(600),
    # Their servers run on SQLite files of their own, whatever the leg: once, in the SQLite legs, is enough.
    pytest.mark.skipif(os.environ.get("DJANGO_MCP_DATABASE") == "postgres", reason="servers of their own, on SQLite"),
]

CLIENTS = Path(__file__).resolve().parent / "clients"
RENDERED = "Rendered 'x' (2 frames)."


@pytest.fixture(scope="module")
def python_sdk(clients: dict[str, install.Installed]) -> str:
    return clients["python-sdk"].path


def _signed_in_daphne(settings: str, database: Path, **env: str) -> Iterator[str]:
    env = {
        "DJANGO_SETTINGS_MODULE": settings,
        "DJANGO_MCP_DATABASE": "sqlite",
        "DJANGO_MCP_SQLITE": str(database),
        "DJANGO_MCP_TEST_SQLITE": str(database),
        **env,
    }
    migrate(env)
    subprocess.run(
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


def test_typescript_sdk_1x_registers_signs_in_and_calls_tools(clients, example_oauth):
    summary = run_client(
        [
            clients["node"].path,
            str(CLIENTS / "ts_oauth_client.mjs"),
            clients["ts-sdk"].path,
            example_oauth + "/mcp",
            "--username",
            "demo",
            "--password",
            "demo-pw",
        ]
    )
    assert_passed(summary)
    assert summary["iss"] == example_oauth and summary["registered_as"] and summary["scope"] == "mcp"
    assert summary["whoami"] == "demo" and summary["echo"] == "hi"
    assert summary["task"] == {"status": "completed", "text": RENDERED}  # 1.x: the optional task tool runs inline


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


def test_conformance_authorization_suite_passes_against_the_example_server(example_oauth, tmp_path):
    """The official suite's ``authorization`` command: server metadata, then the code grant (S256, iss, token)."""
    node, cli = runner.install()
    port = runner.free_port()
    callback = f"http://127.0.0.1:{port}/callback"
    registered = httpx.post(
        example_oauth + "/o/register/",
        json={
            "redirect_uris": [callback],
            "token_endpoint_auth_method": "none",
            "grant_types": ["authorization_code"],
            "response_types": ["code"],
            "client_name": "conformance",
        },
    )
    assert registered.status_code == 201, registered.text
    suite = subprocess.Popen(
        [
            node,
            str(cli),
            "authorization",
            "--url",
            example_oauth,
            "--client-id",
            registered.json()["client_id"],
            "--resource",
            example_oauth + "/mcp",
            "-p",
            str(port),
            "-o",
            str(tmp_path),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    output: list[str] = []
    try:
        assert suite.stdout is not None
        for line in suite.stdout:  # the suite prints the URL a user would open, then waits for its callback
            output.append(re.sub(r"\x1b\[[0-9;]*m", "", line))
            if output[-1].startswith(example_oauth + "/o/authorize/"):
                break
        answer = sign_in_and_allow(output[-1].strip(), callback, "demo", "demo-pw")
        httpx.get(callback, params=answer, timeout=20)  # the browser lands on the suite's callback
        rest, _ = suite.communicate(timeout=120)
    finally:
        if suite.poll() is None:
            suite.kill()
    report = "".join(output) + re.sub(r"\x1b\[[0-9;]*m", "", rest)
    assert re.search(r"Total: \d+ passed, 0 failed", report), report[-3000:]
    assert "SKIPPED" not in report and suite.returncode == 0, report[-3000:]
