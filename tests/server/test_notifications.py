"""Request-scoped notifications on the SSE response of the same POST, and cancellation."""

import asyncio
import json

import pytest
from asgiref.testing import ApplicationCommunicator
from django.core.asgi import get_asgi_application

from tests.toolapp.tools import EVENTS
from tests.wire import asgi_scope, assert_wire, post, request_body, sse_messages

LOG_LEVEL = "io.modelcontextprotocol/logLevel"


async def test_progress_goes_out_on_sse_before_the_result(async_client):
    body = request_body("tools/call", {"name": "progress_steps", "arguments": {"steps": 3}}, progressToken="tok-1")
    response = await post(async_client, body)
    assert response.status_code == 200
    assert response["X-Accel-Buffering"] == "no"
    assert "no-cache" in response["Cache-Control"]
    messages = await sse_messages(response)
    progress = [m for m in messages if m.get("method") == "notifications/progress"]
    assert [p["params"]["progress"] for p in progress] == [1, 2, 3]
    assert all(p["params"]["progressToken"] == "tok-1" and p["params"]["total"] == 3 for p in progress)
    for p in progress:
        assert_wire(p, "ProgressNotification")
    final = messages[-1]
    assert_wire(final, "CallToolResultResponse")
    assert final["result"]["content"][0]["text"] == "done"
    assert len(messages) == 4


async def test_progress_sent_by_a_handler_that_never_waits_still_goes_out_before_the_result(async_client):
    body = request_body("tools/call", {"name": "progress_at_once"}, progressToken="tok-2")
    response = await post(async_client, body)
    assert response["Content-Type"].startswith("text/event-stream")
    messages = await sse_messages(response)
    assert [m.get("method") for m in messages] == ["notifications/progress", None]
    assert messages[0]["params"]["message"] == "all at once"
    assert messages[1]["result"]["content"][0]["text"] == "done"


async def test_integer_progress_token_is_echoed_as_integer(async_client):
    body = request_body("tools/call", {"name": "progress_steps", "arguments": {"steps": 1}}, progressToken=99)
    messages = await sse_messages(await post(async_client, body))
    assert messages[0]["params"]["progressToken"] == 99


async def test_without_progress_token_the_answer_is_plain_json(async_client):
    body = request_body("tools/call", {"name": "progress_steps", "arguments": {"steps": 3}})
    response = await post(async_client, body)
    assert response["Content-Type"].startswith("application/json")
    assert json.loads(response.content)["result"]["content"][0]["text"] == "done"


async def test_progress_from_a_sync_tool_thread(async_client):
    body = request_body("tools/call", {"name": "sync_progress"}, progressToken="s")
    messages = await sse_messages(await post(async_client, body))
    assert [m["params"]["progress"] for m in messages[:-1]] == [1, 2]
    assert messages[-1]["result"]["content"][0]["text"] == "done"


async def test_log_messages_only_at_or_above_the_requested_level(async_client):
    body = request_body("tools/call", {"name": "chatty"}, **{LOG_LEVEL: "info"})
    messages = await sse_messages(await post(async_client, body))
    logs = [m for m in messages if m.get("method") == "notifications/message"]
    assert [m["params"]["level"] for m in logs] == ["info", "warning", "error"]
    assert logs[0]["params"] == {"level": "info", "data": {"said": "info"}, "logger": "chatty"}
    for m in logs:
        assert_wire(m, "LoggingMessageNotification")
    assert messages[-1]["result"]["content"][0]["text"] == "said it all"


async def test_no_log_messages_without_log_level(async_client):
    response = await post(async_client, request_body("tools/call", {"name": "chatty"}))
    assert response["Content-Type"].startswith("application/json")
    assert json.loads(response.content)["result"]["content"][0]["text"] == "said it all"


async def test_client_disconnect_cancels_the_handler():
    app = get_asgi_application()
    body = request_body("tools/call", {"name": "sleepy", "arguments": {"seconds": 30}})
    scope = asgi_scope(body)
    communicator = ApplicationCommunicator(app, scope)
    await communicator.send_input({"type": "http.request", "body": json.dumps(body).encode(), "more_body": False})
    for _ in range(200):
        if EVENTS.get("sleepy") == "started":
            break
        await asyncio.sleep(0.01)
    assert EVENTS.get("sleepy") == "started"
    await communicator.send_input({"type": "http.disconnect"})
    for _ in range(200):
        if EVENTS.get("sleepy") == "cancelled":
            break
        await asyncio.sleep(0.01)
    assert EVENTS["sleepy"] == "cancelled"
    # Nothing is written for a cancelled request.
    with pytest.raises(asyncio.TimeoutError):
        await communicator.receive_output(timeout=0.2)
    await communicator.wait(timeout=1)
