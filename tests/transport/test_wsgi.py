"""Under a WSGI server (gunicorn, runserver without daphne): what a request-response method needs works;
what needs an event loop that outlives the response answers a clear error.

Django's sync test client builds ``WSGIRequest``s and runs the async view as a WSGI server does, on an
event loop that ends with the response. ``tests/live/test_wsgi.py`` runs the example under gunicorn.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client

from django_mcp.models import Task
from django_mcp.tasks import EXTENSION_ID
from tests.wire import headers_for, initialize_body, request_body

pytestmark = pytest.mark.django_db(transaction=True)

TASKS = {"extensions": {EXTENSION_ID: {}}}


def post(client: Client, body: dict[str, Any], path: str = "/mcp", **headers: str) -> Any:
    hdrs = {**headers_for(body), **headers}
    content_type = hdrs.pop("Content-Type")
    return client.post(path, data=json.dumps(body), content_type=content_type, headers=hdrs)


def call(client: Client, method: str, params: dict[str, Any] | None = None, path: str = "/mcp", **meta: Any) -> Any:
    return post(client, request_body(method, params, **meta), path)


def messages(response: Any) -> list[dict[str, Any]]:
    assert response["Content-Type"] == "text/event-stream"
    assert not response.streaming  # whole: nothing may stream after a WSGI response
    return [
        json.loads(line[len("data: ") :])
        for line in response.content.decode().splitlines()
        if line.startswith("data: ")
    ]


def test_a_plain_tool_call_answers_json(client):
    response = call(client, "tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}})
    assert response.status_code == 200 and response["Content-Type"].startswith("application/json")
    assert response.json()["result"]["content"] == [{"type": "text", "text": "3"}]


@pytest.mark.parametrize("tool", ["progress_steps", "sync_progress"])
def test_progress_arrives_with_the_result_as_one_sse_body(client, tool):
    response = call(client, "tools/call", {"name": tool, "arguments": {}}, progressToken="p1")
    assert response.status_code == 200
    sent = messages(response)
    progress = [m["params"]["progress"] for m in sent if m.get("method") == "notifications/progress"]
    assert progress == sorted(progress) and len(progress) >= 2
    assert "result" in sent[-1] and sent[-1]["result"]["content"][0]["type"] == "text"


def test_without_a_progress_token_the_answer_is_json(client):
    response = call(client, "tools/call", {"name": "progress_steps", "arguments": {}})
    assert response["Content-Type"].startswith("application/json")
    assert "result" in response.json()


def test_listen_is_refused_with_a_clear_error(client):
    response = call(client, "subscriptions/listen", {"notifications": {"toolsListChanged": True}})
    assert response.status_code == 501
    error = response.json()["error"]
    assert error["code"] == -32603 and "needs an ASGI server" in error["message"]


def test_modern_mrtr_works(client):
    first = call(client, "tools/call", {"name": "greet_me", "arguments": {}}, capabilities={"elicitation": {}})
    assert first.json()["result"]["resultType"] == "input_required"


# -- the handshake era --------------------------------------------------------------------------


def initialize(client: Client, capabilities: dict[str, Any] | None = None) -> str:
    response = post(client, initialize_body("2025-11-25", capabilities or {"elicitation": {}}, "wsgi-tests"))
    assert response.status_code == 200, response.content
    return response["Mcp-Session-Id"]


def session_call(client: Client, session: str, method: str, params: dict[str, Any] | None = None) -> Any:
    body = {"jsonrpc": "2.0", "id": 7, "method": method, "params": params or {}}
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    return client.post(
        "/mcp",
        data=json.dumps(body),
        content_type=headers.pop("Content-Type"),
        headers={**headers, "Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-11-25"},
    )


def test_handshake_sessions_serve_tools(client):
    session = initialize(client)
    response = session_call(client, session, "tools/call", {"name": "add", "arguments": {"a": 2, "b": 2}})
    assert response.json()["result"]["content"] == [{"type": "text", "text": "4"}]


def test_the_handshake_get_stream_is_405(client):
    session = initialize(client)
    response = client.get(
        "/mcp", headers={"Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-11-25", "Accept": "text/event-stream"}
    )
    assert response.status_code == 405 and response["Allow"] == "POST, DELETE"


def test_asking_a_handshake_client_mid_request_is_refused_in_band(client):
    session = initialize(client)
    response = session_call(client, session, "tools/call", {"name": "greet_me", "arguments": {}})
    assert response.status_code == 200  # in a session, errors are in-band
    error = (
        messages(response)[-1]["error"] if response["Content-Type"] == "text/event-stream" else response.json()["error"]
    )
    assert error["code"] == -32603 and "needs an ASGI server" in error["message"]


# -- tasks ---------------------------------------------------------------------------------------


def test_an_optional_task_tool_runs_in_the_request(client):
    for tool, text in (("declared_sync", "sync inline: x"), ("declared", "inline: x"), ("quick", "sync:x")):
        response = call(
            client, "tools/call", {"name": tool, "arguments": {"text": "x"}}, "/mcp-tasks", capabilities=TASKS
        )
        assert response.json()["result"]["content"] == [{"type": "text", "text": text}], tool
    assert Task.objects.count() == 0


def test_a_required_task_tool_without_a_backend_is_refused(client):
    response = call(client, "tools/call", {"name": "only_as_task", "arguments": {}}, "/mcp-tasks", capabilities=TASKS)
    assert response.status_code == 501
    error = response.json()["error"]
    assert "needs an ASGI server" in error["message"] and "task_backend" in error["message"]
    assert Task.objects.count() == 0


def test_a_fleet_task_is_created_read_and_cancelled(client):
    created = call(client, "tools/call", {"name": "sync_sleeper", "arguments": {}}, "/mcp-fleet", capabilities=TASKS)
    handle = created.json()["result"]
    assert (handle["resultType"], handle["status"]) == ("task", "working")
    got = call(client, "tasks/get", {"taskId": handle["taskId"]}, "/mcp-fleet", capabilities=TASKS)
    assert got.json()["result"]["statusMessage"] == "Queued for a worker"
    answered = call(
        client, "tasks/update", {"taskId": handle["taskId"], "inputResponses": {}}, "/mcp-fleet", capabilities=TASKS
    )
    assert (answered.status_code, answered.json()["result"]["resultType"]) == (200, "complete")
    cancelled = call(client, "tasks/cancel", {"taskId": handle["taskId"]}, "/mcp-fleet", capabilities=TASKS)
    assert cancelled.status_code == 200
    got = call(client, "tasks/get", {"taskId": handle["taskId"]}, "/mcp-fleet", capabilities=TASKS)
    assert got.json()["result"]["status"] == "cancelled"  # no worker had claimed it: it never starts
