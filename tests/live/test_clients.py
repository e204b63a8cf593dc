"""Official MCP clients against a real daphne server: the TypeScript SDK 1.x, the Python SDK, FastMCP.

The server is the conformance fixture project (``tests.conformance``: ``echo``,
``render`` and ``test_elicitation`` among its tools, the tasks extension
installed), under daphne on 127.0.0.1. Each client is a script in
``tests/live/clients/`` that drives the URL, prints one JSON summary and exits
non-zero on failure; the clients are installed once into a cache
(``tests/live/clients/install.py``; about 50 s the first time, nothing later).

What runs today and what waits:

* the Python SDK in ``mode="auto"`` negotiates 2026-07-28: runs now;
* FastMCP + fastmcp-tasks (2026-07-28 only; it omits ``Mcp-Name`` on ``tasks/*``, which is accepted);
* the TypeScript SDK 1.x and the Python SDK in ``mode="legacy"``, which speak only the handshake era.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.live.clients import install
from tests.live.clients.summary import assert_passed, run_client
from tests.live.servers import migrate, server_process

pytestmark = [pytest.mark.live, pytest.mark.timeout(900)]

CLIENTS = Path(__file__).resolve().parent / "clients"
MODERN = "2026-07-28"
HANDSHAKE = "2025-11-25"
RENDERED = "Rendered 'x' (2 frames)."
EXAMPLE_TASK_TOOLS = ["--skip-elicitation", "--task-tools"]  # render (optional), delete_everything (required)


@contextmanager
def migrated_daphne(project: str, database: Path, **env: str) -> Iterator[str]:
    """``project``'s settings and ASGI application under daphne on 127.0.0.1, on a migrated SQLite file."""
    env = {"DJANGO_SETTINGS_MODULE": f"{project}.settings", "DJANGO_MCP_SQLITE": str(database), **env}
    migrate(env)
    with server_process(
        ["-m", "daphne", "-b", "127.0.0.1", "-p", "{port}", f"{project}.asgi:application"], env=env
    ) as base:
        yield base


@pytest.fixture(scope="module")
def mcp_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The conformance fixture project (a throw-away SQLite file)."""
    with migrated_daphne(
        "tests.conformance", tmp_path_factory.mktemp("clients") / "db.sqlite3", DJANGO_DEBUG="0"
    ) as base:
        yield base + "/mcp/"


@pytest.fixture(scope="module")
def example_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The example project (the README's render and delete_everything)."""
    with migrated_daphne("example_project", tmp_path_factory.mktemp("example") / "db.sqlite3") as base:
        yield base + "/mcp"


def venv_python(clients: dict[str, install.Installed], key: str) -> str:
    return clients[key].path


# ---------------------------------------------------------------- installation


def test_clients_are_installed_and_import(clients: dict[str, install.Installed]) -> None:
    node, sdk = clients["node"].path, clients["ts-sdk"].path
    probe = (
        "const sdk = process.argv[1];"
        "const { Client } = await import(`file://${sdk}/dist/esm/client/index.js`);"
        "const { StreamableHTTPClientTransport } = await import(`file://${sdk}/dist/esm/client/streamableHttp.js`);"
        "const { LATEST_PROTOCOL_VERSION } = await import(`file://${sdk}/dist/esm/types.js`);"
        "console.log(typeof Client, typeof StreamableHTTPClientTransport, LATEST_PROTOCOL_VERSION);"
    )
    out = subprocess.run(
        [node, "--input-type=module", "-e", probe, sdk], capture_output=True, text=True, timeout=60, check=True
    ).stdout.split()
    assert out == ["function", "function", HANDSHAKE]  # the 1.x line speaks the handshake era only

    out = subprocess.run(
        [venv_python(clients, "python-sdk"), "-c", "import mcp, importlib.metadata as m; print(m.version('mcp'))"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout.split()
    assert out == [install.MCP_VERSION]

    script = (
        "import fastmcp, fastmcp_tasks, importlib.metadata as m; "
        "from fastmcp_tasks import call_tool_task; "
        "print(*(m.version(p) for p in ('fastmcp', 'fastmcp-tasks', 'mcp')))"
    )
    out = subprocess.run(
        [venv_python(clients, "fastmcp"), "-c", script], capture_output=True, text=True, timeout=60, check=True
    ).stdout.split()
    assert out == [install.FASTMCP_VERSION, install.FASTMCP_TASKS_VERSION, install.MCP_VERSION]


# ---------------------------------------------------------------- 2026-07-28


def test_python_sdk_auto_mode_negotiates_2026(clients: dict[str, install.Installed], mcp_url: str) -> None:
    """discover → 2026-07-28; echo; test_elicitation answered through an MRTR round."""
    cmd = [venv_python(clients, "python-sdk"), str(CLIENTS / "py_client.py"), mcp_url, "--mode", "auto"]
    summary = run_client([*cmd, "--expect-version", MODERN])
    assert_passed(summary)
    assert summary["steps"]["call_echo"]["text"] == "hi"


def test_fastmcp_tasks_complete_and_cancel(clients: dict[str, install.Installed], mcp_url: str) -> None:
    summary = run_client([venv_python(clients, "fastmcp"), str(CLIENTS / "fastmcp_client.py"), mcp_url])
    assert_passed(summary)
    assert summary["steps"]["connect"]["protocolVersion"] == MODERN
    assert summary["steps"]["cancel_task"]["status"] == "cancelled"


# ---------------------------------------------------------------- the handshake era


def test_typescript_sdk_handshake(clients: dict[str, install.Installed], mcp_url: str) -> None:
    """initialize + session, tools/list, echo, elicitation/create on the call's SSE stream, DELETE."""
    summary = run_client(
        [clients["node"].path, str(CLIENTS / "ts_client.mjs"), mcp_url],
        env={"DJANGO_MCP_TS_SDK": clients["ts-sdk"].path},
    )
    assert_passed(summary)
    connect = summary["steps"]["connect"]
    assert connect["protocolVersion"] == HANDSHAKE
    assert connect["sessionId"], "no Mcp-Session-Id was issued"
    assert summary["steps"]["terminate"]["deleted"] is True


def test_python_sdk_legacy_mode(clients: dict[str, install.Installed], mcp_url: str) -> None:
    cmd = [venv_python(clients, "python-sdk"), str(CLIENTS / "py_client.py"), mcp_url, "--mode", "legacy"]
    summary = run_client([*cmd, "--expect-version", HANDSHAKE])
    assert_passed(summary)
    assert summary["steps"]["call_echo"]["text"] == "hi"


# ---------------------------------------------------------------- the example's task tools, without tasks
# A handshake-era client never has the tasks extension: the README's render (task_support="optional",
# reads request.task) runs in the request; delete_everything (task_support="required") is refused.


def assert_task_tools_without_tasks(summary: dict[str, Any]) -> None:
    __tracebackhide__ = True
    assert_passed(summary)
    assert summary["steps"]["call_render"]["text"] == RENDERED
    refused = summary["steps"]["call_task_required"]
    assert refused["code"] == -32021
    assert "io.modelcontextprotocol/tasks" in refused["message"] and MODERN in refused["message"]


def test_typescript_sdk_1x_runs_the_example_task_tools(clients: dict[str, install.Installed], example_url: str) -> None:
    summary = run_client(
        [clients["node"].path, str(CLIENTS / "ts_client.mjs"), example_url, *EXAMPLE_TASK_TOOLS],
        env={"DJANGO_MCP_TS_SDK": clients["ts-sdk"].path},
    )
    assert summary["steps"]["connect"]["protocolVersion"] == HANDSHAKE
    assert_task_tools_without_tasks(summary)


def test_typescript_client_2x_default_mode_runs_the_example_task_tools(
    clients: dict[str, install.Installed], example_url: str
) -> None:
    """@modelcontextprotocol/client 2.x in its default mode speaks the handshake era."""
    summary = run_client(
        [clients["node"].path, str(CLIENTS / "ts2_client.mjs"), example_url],
        env={"DJANGO_MCP_TS_CLIENT": clients["ts-client"].path},
    )
    connect = summary["steps"]["connect"]
    assert (connect["era"], connect["protocolVersion"]) == ("legacy", HANDSHAKE)
    assert_task_tools_without_tasks(summary)
    assert summary["steps"]["close"]["deleted"] is True


def test_python_sdk_legacy_mode_runs_the_example_task_tools(
    clients: dict[str, install.Installed], example_url: str
) -> None:
    cmd = [venv_python(clients, "python-sdk"), str(CLIENTS / "py_client.py"), example_url, "--mode", "legacy"]
    summary = run_client([*cmd, "--expect-version", HANDSHAKE, *EXAMPLE_TASK_TOOLS])
    assert_task_tools_without_tasks(summary)


# ---------------------------------------------------------------- the documented examples, as written


def docs_python_block(page: str, heading: str) -> str:
    """The first Python block under ``heading`` of ``docs/<page>``."""
    text = (Path(__file__).resolve().parents[2] / "docs" / page).read_text(encoding="utf-8")
    section = text.split(f"\n{heading}\n", 1)[1].split("\n## ", 1)[0]
    return section.split("```python\n", 1)[1].split("\n```", 1)[0]


def test_the_documented_fastmcp_example_runs_the_example_task_tools(
    clients: dict[str, install.Installed], example_url: str, tmp_path: Path
) -> None:
    """docs/clients.md's fastmcp block, its URL pointed at the example under daphne: render, then
    delete_everything with its question answered by the elicitation handler."""
    code = docs_python_block("clients.md", "## fastmcp with fastmcp-tasks")
    assert "http://127.0.0.1:8000/mcp" in code
    script = tmp_path / "fastmcp_example.py"
    script.write_text(code.replace("http://127.0.0.1:8000/mcp", example_url), encoding="utf-8")
    done = subprocess.run(
        [venv_python(clients, "fastmcp"), str(script)], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    assert "This deletes everything. Go ahead?" in lines, lines
    assert RENDERED.replace("'x' (2", "'intro' (3") in done.stdout, lines
    assert lines[-1] == "Everything is gone (not really: this is a demo).", lines


# ---------------------------------------------------------------- inside the project a team already has
# tests/field: the conformance fixtures behind ATOMIC_REQUESTS, LoginRequiredMiddleware, GZip, Locale,
# USE_TZ = False and the rest (tests/field/settings.py). Its own SQLite file: once per CI run.

on_the_embedded_leg = pytest.mark.skipif(
    os.environ.get("DJANGO_MCP_DATABASE", "sqlite") != "sqlite", reason="its own SQLite: once per run"
)


@pytest.fixture(scope="module")
def field_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with migrated_daphne("tests.field", tmp_path_factory.mktemp("field-clients") / "db.sqlite3") as base:
        yield base + "/mcp"


@on_the_embedded_leg
@pytest.mark.parametrize("mode, version", [("auto", MODERN), ("legacy", HANDSHAKE)])
def test_python_sdk_inside_the_teams_project(
    clients: dict[str, install.Installed], field_url: str, mode: str, version: str
) -> None:
    cmd = [venv_python(clients, "python-sdk"), str(CLIENTS / "py_client.py"), field_url, "--mode", mode]
    summary = run_client([*cmd, "--expect-version", version])
    assert_passed(summary)
    assert summary["steps"]["call_echo"]["text"] == "hi"


@on_the_embedded_leg
def test_typescript_sdk_inside_the_teams_project(clients: dict[str, install.Installed], field_url: str) -> None:
    summary = run_client(
        [clients["node"].path, str(CLIENTS / "ts_client.mjs"), field_url],
        env={"DJANGO_MCP_TS_SDK": clients["ts-sdk"].path},
    )
    assert_passed(summary)
    assert summary["steps"]["connect"]["protocolVersion"] == HANDSHAKE


@on_the_embedded_leg
def test_fastmcp_tasks_inside_the_teams_project(clients: dict[str, install.Installed], field_url: str) -> None:
    summary = run_client([venv_python(clients, "fastmcp"), str(CLIENTS / "fastmcp_client.py"), field_url])
    assert_passed(summary)
    assert summary["steps"]["cancel_task"]["status"] == "cancelled"
