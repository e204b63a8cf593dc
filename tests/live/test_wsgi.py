"""The example project under gunicorn (sync workers, WSGI): its plain tools, and a task on the worker fleet.

Two gunicorn workers and one ``manage.py db_worker`` share a SQLite file and Redis (channel layer and
handshake sessions). What needs an event loop that outlives the response answers a clear error
(``tests/transport/test_wsgi.py`` covers each case in-process).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.live.servers import ROOT, migrate, server_process
from tests.wire import headers_for, initialize_body, request_body

pytestmark = [pytest.mark.live, pytest.mark.timeout(300)]

TASKS = {"extensions": {"io.modelcontextprotocol/tasks": {}}}


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    env = {
        "DJANGO_SETTINGS_MODULE": "example_project.settings",
        "DJANGO_MCP_SQLITE": str(tmp_path_factory.mktemp("wsgi") / "db.sqlite3"),
        "DJANGO_MCP_FLEET": "1",
        "REDIS_URL": "redis://127.0.0.1:6379/7",
    }
    migrate(env)
    return env


@pytest.fixture(scope="module")
def base(env: dict[str, str]) -> Iterator[str]:
    worker = subprocess.Popen(
        [sys.executable, "manage.py", "db_worker", "--backend", "fleet", "--interval", "0.1"],
        cwd=ROOT,
        env={**os.environ, **env},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        args = ["-m", "gunicorn", "-w", "2", "-b", "127.0.0.1:{port}", "--timeout", "60", "example_project.wsgi"]
        with server_process(args, env=env, ready_path="/mcp") as url:
            yield url
    finally:
        worker.terminate()
        worker.wait(timeout=20)


def post(base: str, body: dict[str, Any], **headers: str) -> httpx.Response:
    return httpx.post(base + "/mcp", content=json.dumps(body), headers={**headers_for(body), **headers}, timeout=60)


def call(base: str, method: str, params: dict[str, Any], **meta: Any) -> httpx.Response:
    return post(base, request_body(method, params, **meta))


def sse(response: httpx.Response) -> list[dict[str, Any]]:
    assert response.headers["content-type"] == "text/event-stream"
    return [json.loads(line[6:]) for line in response.text.splitlines() if line.startswith("data: ")]


def test_plain_tools(base):
    echo = call(base, "tools/call", {"name": "echo", "arguments": {"text": "hi", "times": 2}})
    assert echo.json()["result"]["content"] == [{"type": "text", "text": "hi hi"}]
    stats = call(base, "tools/call", {"name": "word_stats", "arguments": {"text": "a b a"}})
    assert stats.json()["result"]["structuredContent"] == {"words": 3, "unique": 2, "most_common": ["a", "b"]}


def test_progress_comes_with_the_result(base):
    response = call(
        base, "tools/call", {"name": "slow_job", "arguments": {"steps": 3, "delay_ms": 10}}, progressToken="job"
    )
    messages = sse(response)
    assert [m["params"]["progress"] for m in messages[:-1]] == [1, 2, 3]
    assert messages[-1]["result"]["content"] == [{"type": "text", "text": "Done after 3 steps."}]


def test_the_handshake_era_with_sessions_shared_by_both_workers(base):
    initialized = post(base, initialize_body("2025-11-25", {}, "gunicorn-test"))
    session = initialized.headers["mcp-session-id"]
    headers = {"Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-11-25"}
    for n in range(4):  # either worker answers
        body = {
            "jsonrpc": "2.0",
            "id": n,
            "method": "tools/call",
            "params": {"name": "echo", "arguments": {"text": "s"}},
        }
        answer = httpx.post(
            base + "/mcp", content=json.dumps(body), headers={**headers_for(body), **headers}, timeout=30
        )
        assert answer.json()["result"]["content"] == [{"type": "text", "text": "s"}]
    stream = httpx.get(base + "/mcp", headers={**headers, "Accept": "text/event-stream"}, timeout=30)
    assert stream.status_code == 405


def test_a_task_tool_in_the_web_process_runs_in_the_request(base):
    render = call(base, "tools/call", {"name": "render", "arguments": {"scene": "x", "frames": 1}}, capabilities=TASKS)
    assert render.json()["result"]["content"] == [{"type": "text", "text": "Rendered 'x' (1 frames)."}]


def test_a_fleet_task_completes(base):
    handle = call(base, "tools/call", {"name": "crunch", "arguments": {"n": 1000}}, capabilities=TASKS).json()["result"]
    assert handle["resultType"] == "task"
    deadline = time.monotonic() + 60
    while True:
        task = call(base, "tasks/get", {"taskId": handle["taskId"]}, capabilities=TASKS).json()["result"]
        if task["status"] not in ("working", "input_required"):
            break
        assert time.monotonic() < deadline, task
        time.sleep(0.2)
    assert task["status"] == "completed", task
    assert task["result"]["content"] == [{"type": "text", "text": "The sum of the squares below 1,000 is 332,833,500."}]


def test_listen_is_refused(base):
    response = call(base, "subscriptions/listen", {"notifications": {"toolsListChanged": True}})
    assert response.status_code == 501 and "needs an ASGI server" in response.json()["error"]["message"]
