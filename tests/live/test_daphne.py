"""End to end: real daphne processes on 127.0.0.1, driven over HTTP as a client would."""

import json
import os
import subprocess
import sys
import time

import httpx
import pytest

from tests.live.servers import ROOT, server_process
from tests.wire import assert_wire, headers_for, request_body

pytestmark = pytest.mark.live


@pytest.fixture(scope="module")
def daphne_url():
    with server_process(
        ["-m", "daphne", "-b", "127.0.0.1", "-p", "{port}", "tests.asgi:application"],
        env={"DJANGO_SETTINGS_MODULE": "tests.settings"},
    ) as base:
        yield base + "/mcp/"


@pytest.fixture(scope="module")
def example_url(tmp_path_factory):
    db = tmp_path_factory.mktemp("example") / "db.sqlite3"
    # The example's embedded default, whatever the suite runs on.
    env = {
        "DJANGO_SETTINGS_MODULE": "example_project.settings",
        "DJANGO_MCP_SQLITE": str(db),
        "DJANGO_MCP_DATABASE": "sqlite",
        "REDIS_URL": "",
    }
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env={**os.environ, **env}, check=True)
    with server_process(
        ["manage.py", "runserver", "127.0.0.1:{port}", "--noreload"],
        env=env,
    ) as base:
        yield base + "/mcp/"


def rpc(url, method, params=None, **kw):
    body = request_body(method, params, **kw)
    response = httpx.post(url, content=json.dumps(body), headers=headers_for(body), timeout=10)
    return response, response.json()


def test_discover_and_call_over_real_http(daphne_url):
    response, body = rpc(daphne_url, "server/discover")
    assert response.status_code == 200
    assert response.headers["server"] == "daphne"
    assert_wire(body, "DiscoverResultResponse")
    response, body = rpc(daphne_url, "tools/call", {"name": "add", "arguments": {"a": 20, "b": 22}})
    assert body["result"]["content"][0]["text"] == "42"


def test_errors_keep_their_status_over_real_http(daphne_url):
    response, body = rpc(daphne_url, "ping")
    assert (response.status_code, body["error"]["code"]) == (404, -32601)
    bad = httpx.post(daphne_url, content=b"{nope", headers=headers_for({}), timeout=10)
    assert (bad.status_code, bad.json()["error"]["code"]) == (400, -32700)
    assert httpx.get(daphne_url, timeout=10).status_code == 405


def test_progress_streams_as_it_happens(daphne_url):
    body = request_body("tools/call", {"name": "progress_steps", "arguments": {"steps": 3}}, progressToken="live")
    arrivals = []
    with httpx.stream("POST", daphne_url, content=json.dumps(body), headers=headers_for(body), timeout=10) as r:
        assert r.headers["content-type"] == "text/event-stream"
        for line in r.iter_lines():
            if line.startswith("data: "):
                arrivals.append((time.monotonic(), json.loads(line[6:])))
    assert [m.get("method") for _, m in arrivals] == ["notifications/progress"] * 3 + [None]
    assert arrivals[-1][1]["result"]["content"][0]["text"] == "done"


def test_client_disconnect_mid_call_does_not_break_the_server(daphne_url):
    body = request_body("tools/call", {"name": "sleepy", "arguments": {"seconds": 30}})
    with pytest.raises(httpx.ReadTimeout):
        httpx.post(daphne_url, content=json.dumps(body), headers=headers_for(body), timeout=0.5)
    response, result = rpc(daphne_url, "tools/call", {"name": "add", "arguments": {"a": 1}})
    assert result["result"]["content"][0]["text"] == "1"


def test_example_project_serves_its_demo_tools(example_url):
    _, listed = rpc(example_url, "tools/list")
    assert {t["name"] for t in listed["result"]["tools"]} == {
        "echo",
        "whoami",
        "slow_job",
        "word_stats",
        "render",
        "delete_everything",
        "crunch",
        "list_books",  # published from the demo's ninja API
        "get_book",
        "add_book",
        "find_books",  # a published model query
    }
    _, crunched = rpc(example_url, "tools/call", {"name": "crunch", "arguments": {"n": 4}})  # no tasks declared
    assert crunched["result"]["content"][0]["text"] == "The sum of the squares below 4 is 14."
    _, stats = rpc(example_url, "tools/call", {"name": "word_stats", "arguments": {"text": "a b a"}})
    assert stats["result"]["structuredContent"] == {"words": 3, "unique": 2, "most_common": ["a", "b"]}
    _, echoed = rpc(example_url, "tools/call", {"name": "echo", "arguments": {"text": "hi", "times": 2}})
    assert echoed["result"]["content"][0]["text"] == "hi hi"


def test_example_project_publishes_its_api_and_a_query(example_url):
    """The demo's ninja operations and model query as tools, over real HTTP; add_book's own auth refuses."""
    added = rpc(
        example_url, "tools/call", {"name": "add_book", "arguments": {"body": {"title": "T", "author": "A", "year": 1}}}
    )
    assert added[1]["result"] == {**added[1]["result"], "isError": True}
    assert added[1]["result"]["content"][0]["text"] == "HTTP 401: Unauthorized"
    _, listed = rpc(example_url, "tools/call", {"name": "list_books", "arguments": {"author": "nobody"}})
    assert listed["result"]["structuredContent"] == {"result": []}
    _, found = rpc(example_url, "tools/call", {"name": "find_books", "arguments": {"filter": {"year__gte": 3000}}})
    assert found["result"]["structuredContent"] == {"results": [], "hasMore": False, "nextOffset": None}
    _, refused = rpc(example_url, "tools/call", {"name": "find_books", "arguments": {"filter": {"added_by": 1}}})
    assert refused["error"]["code"] == -32602


EXT = {"extensions": {"io.modelcontextprotocol/tasks": {}}, "elicitation": {}}


def poll(url, task_id, *statuses, timeout=15.0):
    deadline = time.monotonic() + timeout
    while True:
        _, body = rpc(url, "tasks/get", {"taskId": task_id}, capabilities=EXT)
        if body["result"]["status"] in statuses:
            return body["result"]
        assert time.monotonic() < deadline, body
        time.sleep(0.05)


def test_example_render_runs_as_a_task_and_can_be_cancelled(example_url):
    _, handle = rpc(
        example_url, "tools/call", {"name": "render", "arguments": {"scene": "s", "frames": 3}}, capabilities=EXT
    )
    assert handle["result"]["resultType"] == "task"
    done = poll(example_url, handle["result"]["taskId"], "completed")
    assert done["result"]["content"][0]["text"] == "Rendered 's' (3 frames)."
    assert done["statusMessage"] == "Frame 3/3"
    _, long = rpc(example_url, "tools/call", {"name": "render", "arguments": {"scene": "l"}}, capabilities=EXT)
    task_id = long["result"]["taskId"]
    _, ack = rpc(example_url, "tasks/cancel", {"taskId": task_id}, capabilities=EXT)
    assert ack["result"]["resultType"] == "complete"
    assert poll(example_url, task_id, "cancelled", "completed")["status"] == "cancelled"
    _, sync = rpc(example_url, "tools/call", {"name": "render", "arguments": {"scene": "x", "frames": 1}})
    assert sync["result"]["content"][0]["text"] == "Rendered 'x' (1 frames)."


def test_example_delete_everything_asks_mid_task(example_url):
    _, handle = rpc(example_url, "tools/call", {"name": "delete_everything"}, capabilities=EXT)
    task_id = handle["result"]["taskId"]
    parked = poll(example_url, task_id, "input_required")
    assert list(parked["inputRequests"]) == ["confirm"]
    answer = {"confirm": {"action": "accept", "content": {"confirm": True}}}
    rpc(example_url, "tasks/update", {"taskId": task_id, "inputResponses": answer}, capabilities=EXT)
    done = poll(example_url, task_id, "completed")
    assert done["result"]["content"][0]["text"].startswith("Everything is gone")
    response, refused = rpc(example_url, "tools/call", {"name": "delete_everything"})
    assert (response.status_code, refused["error"]["code"]) == (400, -32021)
