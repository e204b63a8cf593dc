"""``manage.py mcp_stdio`` started by real clients: the official Python SDK's stdio client (both eras) and the
TypeScript SDK's ``StdioClientTransport``, and by hand as a local client's config would start it.

The server is the conformance fixture project (``echo``, ``render``, ``test_elicitation``, the tasks
extension) on a migrated SQLite file; the hand-driven tests use the example project, run as a user.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.live.clients import install
from tests.live.clients.summary import assert_passed, run_client
from tests.live.servers import migrate

pytestmark = [pytest.mark.live, pytest.mark.timeout(900)]

ROOT = Path(__file__).resolve().parents[2]
CLIENTS = Path(__file__).resolve().parent / "clients"
MODERN = "2026-07-28"
HANDSHAKE = "2025-11-25"
META = {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {}}


def stdio_env(project: str, database: Path) -> dict[str, str]:
    """The whole environment of a command a client config starts: the project's embedded default (SQLite,
    in-memory layer), whatever database this suite runs on."""
    return {
        "DJANGO_SETTINGS_MODULE": f"{project}.settings",
        "DJANGO_MCP_SQLITE": str(database),
        "DJANGO_MCP_DATABASE": "sqlite",
        "REDIS_URL": "",
        "PATH": os.environ.get("PATH", ""),
        "PYTHONPATH": str(ROOT),
    }


@pytest.fixture(scope="module")
def conformance_stdio(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """What a client config names to start the conformance project over stdio (``$DJANGO_MCP_STDIO``)."""
    env = stdio_env("tests.conformance", tmp_path_factory.mktemp("stdio") / "db.sqlite3")
    migrate(env)
    args = ["manage.py", "mcp_stdio", "--path", "/mcp/"]
    return {"command": sys.executable, "args": args, "cwd": str(ROOT), "env": env}


def test_python_sdk_stdio_client_in_the_handshake_era(clients: dict[str, install.Installed], conformance_stdio):
    """initialize, tools/list, echo, elicitation/create answered mid-call, render in the request, -32021."""
    summary = run_client(
        [clients["python-sdk"].path, str(CLIENTS / "py_client.py"), "stdio", "--mode", "legacy"]
        + ["--expect-version", HANDSHAKE, "--task-tools", "--required-tool", "failing_job"],
        env={"DJANGO_MCP_STDIO": json.dumps(conformance_stdio)},
    )
    assert_passed(summary)
    assert summary["steps"]["call_echo"]["text"] == "hi"
    assert summary["steps"]["call_render"]["text"] == "Rendered 'x' (2 frames)."


def test_python_sdk_stdio_client_negotiates_2026(clients: dict[str, install.Installed], conformance_stdio):
    """server/discover over stdio, then the 2026-07-28 envelope: echo, and elicitation as an MRTR round."""
    summary = run_client(
        [clients["python-sdk"].path, str(CLIENTS / "py_client.py"), "stdio", "--mode", "auto"]
        + ["--expect-version", MODERN],
        env={"DJANGO_MCP_STDIO": json.dumps(conformance_stdio)},
    )
    assert_passed(summary)
    assert summary["steps"]["call_echo"]["text"] == "hi"


def test_typescript_sdk_stdio_transport(clients: dict[str, install.Installed], conformance_stdio):
    """initialize, tools/list, echo, and elicitation/create answered mid-call, over StdioClientTransport."""
    summary = run_client(
        [clients["node"].path, str(CLIENTS / "ts_client.mjs"), "stdio"],
        env={"DJANGO_MCP_TS_SDK": clients["ts-sdk"].path, "DJANGO_MCP_STDIO": json.dumps(conformance_stdio)},
    )
    assert_passed(summary)  # the 1.x line speaks the handshake era only (its stdio transport keeps no version)
    assert summary["steps"]["connect"]["server"]["name"]
    assert summary["steps"]["call_echo"]["text"] == "hi"
    assert summary["steps"]["elicitation"]["ok"] is True


# ---------------------------------------------------------------- by hand: the user, tasks, errors


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The example project's environment on a migrated database with the users ``alice`` and ``inactive``."""
    env = stdio_env("example_project", tmp_path_factory.mktemp("example-stdio") / "db.sqlite3")
    migrate(env)
    make_users = (
        "from django.contrib.auth.models import User; User.objects.create_user('alice'); "
        "User.objects.create_user('inactive', is_active=False)"
    )
    subprocess.run([sys.executable, "manage.py", "shell", "-c", make_users], cwd=ROOT, env=env, check=True)
    return env


def stdio(env: dict[str, str], *lines: str | dict[str, Any], args: tuple[str, ...] = ()) -> tuple[list[Any], str, int]:
    """Start ``mcp_stdio``, write ``lines``, close its input; the JSON lines it wrote, its stderr, its exit code."""
    text = "".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines)
    proc = subprocess.run(
        [sys.executable, "manage.py", "mcp_stdio", *args],
        cwd=ROOT,
        env=env,
        input=text.encode(),
        capture_output=True,
        timeout=60,
        check=False,
    )
    out = [json.loads(line) for line in proc.stdout.decode().splitlines()]
    return out, proc.stderr.decode(), proc.returncode


def request(request_id: int, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": {**(params or {}), "_meta": META}}


def by_id(messages: list[Any]) -> dict[Any, Any]:
    return {message.get("id"): message for message in messages if "id" in message}


def test_calls_run_as_the_user_named(example):
    call = request(1, "tools/call", {"name": "whoami", "arguments": {}})
    as_alice, _, code = stdio(example, call, args=("--user", "alice"))
    anonymous, _, _ = stdio(example, call)
    assert code == 0
    assert by_id(as_alice)[1]["result"]["content"][0]["text"] == "alice"
    assert by_id(anonymous)[1]["result"]["content"][0]["text"] == "anonymous"


def test_a_task_started_over_stdio_is_a_row_of_its_owner(example):
    """render as a task: the handle, tasks/get until completed (before the input ends), the row in the database."""
    extension = {"io.modelcontextprotocol/tasks": {}}
    meta = {**META, "io.modelcontextprotocol/clientCapabilities": {"extensions": extension}}
    start = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "render", "arguments": {"scene": "stdio", "frames": 1}, "_meta": meta},
    }
    proc = subprocess.Popen(
        [sys.executable, "manage.py", "mcp_stdio", "--user", "alice"],
        cwd=ROOT,
        env=example,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(json.dumps(start).encode() + b"\n")
        proc.stdin.flush()
        handle = json.loads(proc.stdout.readline())["result"]
        assert handle["resultType"] == "task", handle
        task_id = handle["task"]["taskId"] if "task" in handle else handle["taskId"]
        deadline, status = time.monotonic() + 30, ""
        for number in range(2, 1000):
            get = {"jsonrpc": "2.0", "id": number, "method": "tasks/get", "params": {"taskId": task_id, "_meta": meta}}
            proc.stdin.write(json.dumps(get).encode() + b"\n")
            proc.stdin.flush()
            status = json.loads(proc.stdout.readline())["result"]["status"]
            if status == "completed" or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        proc.stdin.close()
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
    assert status == "completed"
    check = f"from django_mcp.tasks.models import Task; t = Task.objects.get(pk='{task_id}'); print(t.status, t.user)"
    row = subprocess.run(
        [sys.executable, "manage.py", "shell", "-v", "0", "-c", check],
        cwd=ROOT,
        env=example,
        capture_output=True,
        text=True,
    )
    assert row.stdout.split() == ["completed", "alice"], row.stderr


def test_bad_lines_get_json_rpc_errors_and_the_stream_stays_usable(example):
    out, _, code = stdio(
        example,
        "this is not json",
        "[1, 2]",
        {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": 1}}},
        request(8, "tools/call", {"name": "echo", "arguments": {"text": 5}}),
        request(9, "no/such/method"),
        request(10, "tools/call", {"name": "echo", "arguments": {"text": "still here"}}),
    )
    assert code == 0
    errors = [message["error"]["code"] for message in out if message.get("id") is None]
    assert errors == [-32700, -32600]
    answered = by_id(out)
    assert answered[7]["error"]["code"] in (-32600, -32602)  # no _meta and no session: not a valid request
    assert answered[8]["error"]["code"] == -32602
    assert answered[9]["error"]["code"] == -32601
    assert answered[10]["result"]["content"][0]["text"] == "still here"


def test_what_the_command_refuses(example):
    for args, message in (
        (("--user", "nobody"), "No user 'nobody'"),
        (("--user", "inactive"), "The user 'inactive' is inactive"),
        (("--path", "/elsewhere"), "No MCP endpoint at '/elsewhere'"),
    ):
        out, err, code = stdio(example, args=args)
        assert (out, code) == ([], 1)
        assert message in err


def test_print_in_a_tool_cannot_corrupt_the_protocol_stream(example):
    """Everything but protocol lines goes to stderr: a line on stdout that is not JSON would break the client."""
    out, err, code = stdio(example, request(1, "tools/call", {"name": "echo", "arguments": {"text": "x"}}))
    assert code == 0 and by_id(out)[1]["result"]["content"][0]["text"] == "x"  # every stdout line parsed as JSON
