"""The handshake era (2025-11-25 and earlier) on the same endpoint: initialize, sessions, GET, DELETE, asking."""

from __future__ import annotations

import asyncio
import contextlib
import json

import pytest

from tests.session_calls import HEADERS, initialize, post, rpc
from tests.toolapp.tools import EVENTS
from tests.waiting import until
from tests.wire import initialize_body

pytestmark = pytest.mark.django_db(transaction=True)


async def test_initialize_negotiates_and_opens_a_session(async_client):
    session, result = await initialize(async_client)
    assert len(session) >= 32
    assert result["protocolVersion"] == "2025-11-25"
    assert result["serverInfo"]["name"]
    assert "tools" in result["capabilities"] and "extensions" not in result["capabilities"]
    assert "resultType" not in result


@pytest.mark.parametrize(
    "asked, answered",
    [
        ("2025-06-18", "2025-06-18"),
        ("2025-03-26", "2025-03-26"),
        ("2024-11-05", "2024-11-05"),
        ("1999-01-01", "2025-11-25"),
    ],
)
async def test_version_negotiation(async_client, asked, answered):
    _, result = await initialize(async_client, version=asked)
    assert result["protocolVersion"] == answered


async def test_tools_through_the_session_use_the_same_handlers(async_client):
    session, _ = await initialize(async_client)
    status, body = await rpc(async_client, session, "tools/list")
    assert status == 200
    names = [t["name"] for t in body["result"]["tools"]]
    assert "add" in names
    status, body = await rpc(async_client, session, "tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}})
    assert body["result"]["content"] == [{"type": "text", "text": "5"}]
    assert "resultType" not in body["result"]
    status, body = await rpc(async_client, session, "ping")
    assert (status, body["result"]) == (200, {})


async def test_missing_unknown_and_ended_sessions(async_client):
    status, body = await rpc(async_client, None, "tools/list", headers={"MCP-Protocol-Version": "2025-11-25"})
    assert (status, body["error"]["code"]) == (400, -32600)
    status, body = await rpc(async_client, "not-a-session", "tools/list")
    assert (status, body["error"]["code"]) == (404, -32001)
    session, _ = await initialize(async_client)
    response = await async_client.delete("/mcp/", headers={"Mcp-Session-Id": session})
    assert response.status_code == 200
    status, body = await rpc(async_client, session, "tools/list")
    assert status == 404
    response = await async_client.delete("/mcp/", headers={"Mcp-Session-Id": session})
    assert response.status_code == 404


async def test_a_session_is_bound_to_its_principal(async_client):
    auth = {"Authorization": "Bearer alice-token"}
    response = await post(
        async_client,
        initialize_body(),
        path="/mcp-bearer/",
        headers=auth,
    )
    session = response["Mcp-Session-Id"]
    status, _ = await rpc(async_client, session, "ping", path="/mcp-bearer/", headers=auth)
    assert status == 200
    status, body = await rpc(
        async_client, session, "ping", path="/mcp-bearer/", headers={"Authorization": "Bearer bob-token"}
    )
    assert (status, body["error"]["code"]) == (404, -32001)


async def test_a_header_naming_an_unserved_revision_is_400(async_client):
    session, _ = await initialize(async_client)
    status, body = await rpc(async_client, session, "ping", version="2099-01-01")
    assert status == 400 and body["error"]["data"]["requested"] == "2099-01-01"


async def test_modern_only_methods_and_tasks_are_not_served(async_client):
    session, _ = await initialize(async_client, path="/mcp-tasks/")
    for method in ("server/discover", "subscriptions/listen", "tasks/get", "tasks/result", "tasks/list"):
        status, body = await rpc(async_client, session, method, {"taskId": "x"}, path="/mcp-tasks/")
        assert (status, body["error"]["code"]) == (200, -32601), method


async def test_task_tools_answer_synchronously_and_params_task_is_ignored(async_client):
    session, _ = await initialize(async_client, path="/mcp-tasks/")
    status, body = await rpc(async_client, session, "tools/list", path="/mcp-tasks/")
    assert all("execution" not in t for t in body["result"]["tools"])
    status, body = await rpc(
        async_client,
        session,
        "tools/call",
        {"name": "quick", "arguments": {"text": "a"}, "task": {"ttl": 60000}},
        path="/mcp-tasks/",
    )
    assert body["result"]["content"] == [{"type": "text", "text": "sync:a"}]
    status, body = await rpc(async_client, session, "tools/call", {"name": "only_as_task"}, path="/mcp-tasks/")
    assert body["error"]["code"] == -32021
    assert "io.modelcontextprotocol/tasks" in body["error"]["message"]
    assert "2026-07-28" in body["error"]["message"] and "2025-11-25" in body["error"]["message"]


@pytest.mark.parametrize(
    "tool, text",
    [("declared", "inline: a"), ("declared_sync", "sync inline: a"), ("sync_starts_a_task", "ran in a thread")],
)
async def test_optional_task_tools_run_in_the_request_with_request_task_none(async_client, tool, text):
    # The declarative form reads request.task; a handshake-era client never has a task.
    session, _ = await initialize(async_client, path="/mcp-tasks/")
    arguments = {} if tool == "sync_starts_a_task" else {"text": "a"}
    status, body = await rpc(
        async_client, session, "tools/call", {"name": tool, "arguments": arguments}, path="/mcp-tasks/"
    )
    assert (status, body["result"].get("isError", False)) == (200, False), body
    assert body["result"]["content"] == [{"type": "text", "text": text}]


async def test_logging_set_level_and_validation(async_client):
    session, _ = await initialize(async_client)
    status, body = await rpc(async_client, session, "logging/setLevel", {"level": "debug"})
    assert (status, body["result"]) == (200, {})
    status, body = await rpc(async_client, session, "logging/setLevel", {"level": "loud"})
    assert (status, body["error"]["code"]) == (200, -32602)  # in-band inside a session


@pytest.mark.parametrize("layer", ["up", "down"])
async def test_asking_the_client_with_a_real_request_and_a_posted_answer(async_client, layer):
    """With the channel layer down, asking still works within one process (the answer is found here)."""
    from unittest import mock

    from channels.layers import get_channel_layer

    from django_mcp.transport.asking import _pending

    session, _ = await initialize(async_client)
    down = mock.patch.object(get_channel_layer(), "new_channel", side_effect=ConnectionError("redis went away"))
    with down if layer == "down" else contextlib.nullcontext():
        task = asyncio.ensure_future(rpc(async_client, session, "tools/call", {"name": "greet_me"}))
        # The server's elicitation request travels on the POST's SSE stream; answer it with a POST.
        for _ in range(200):
            if _pending:
                break
            await asyncio.sleep(0.01)
        ((_, request_id),) = list(_pending)
        answer = {"jsonrpc": "2.0", "id": request_id, "result": {"action": "accept", "content": {"name": "Ada"}}}
        response = await post(async_client, answer, session=session)
        assert response.status_code == 202
        status, body = await task
    assert body["result"]["content"] == [{"type": "text", "text": "Hello Ada"}]


async def _asked(async_client, session) -> tuple[asyncio.Future, str]:
    """``greet_me`` called, and the id of the request it sent the client (once it is waiting)."""
    from django_mcp.transport.asking import _pending

    call = asyncio.ensure_future(rpc(async_client, session, "tools/call", {"name": "greet_me"}))
    await until(lambda: _pending, 5, "the server's request to the client")
    ((_, request_id),) = list(_pending)
    return call, request_id


async def test_a_client_that_refuses_the_request_fails_the_call_with_its_reason(async_client):
    session, _ = await initialize(async_client)
    call, request_id = await _asked(async_client, session)
    refusal = {"jsonrpc": "2.0", "id": request_id, "error": {"code": -1, "message": "user closed the dialog"}}
    assert (await post(async_client, refusal, session=session)).status_code == 202
    status, body = await call
    assert body["error"]["code"] == -32603
    assert body["error"]["message"] == "The client refused elicitation/create: user closed the dialog"


async def test_a_client_that_never_answers_fails_the_call_when_the_wait_ends(async_client, monkeypatch):
    from django_mcp.transport import asking

    monkeypatch.setattr(asking, "ASK_TIMEOUT_SECONDS", 0.2)
    session, _ = await initialize(async_client)
    status, body = await rpc(async_client, session, "tools/call", {"name": "greet_me"})
    assert (body["error"]["code"], body["error"]["message"]) == (-32603, "The client did not answer in time")
    assert not asking._pending  # nothing left waiting


async def test_an_answer_posted_to_another_process_reaches_the_one_asking(async_client):
    """The other process publishes it on the layer (as JSON text); what else comes on the group is passed over."""
    from channels.layers import get_channel_layer

    from django_mcp.transport import asking, sessions

    session_id, _ = await initialize(async_client)
    call, request_id = await _asked(async_client, session_id)
    group = asking._reply_group(sessions.McpSession(session_id, owner="", protocol_version="", capabilities={}))
    await get_channel_layer().group_send(group, {"type": "something.else", "id": request_id})
    answer = {"jsonrpc": "2.0", "id": request_id, "result": {"action": "accept", "content": {"name": "Grace"}}}
    await get_channel_layer().group_send(
        group, {"type": asking.REPLY_TYPE, "id": request_id, "message": json.dumps(answer)}
    )
    status, body = await call
    assert body["result"]["content"] == [{"type": "text", "text": "Hello Grace"}]


@pytest.mark.parametrize(
    "session_headers, status",
    [
        ({"MCP-Protocol-Version": "2025-11-25"}, 400),
        ({"MCP-Protocol-Version": "2025-11-25", "Mcp-Session-Id": "x"}, 404),
    ],
)
async def test_a_posted_response_without_a_live_session_is_a_json_rpc_error(async_client, session_headers, status):
    answer = {"jsonrpc": "2.0", "id": "django-mcp-1", "result": {"action": "accept"}}
    response = await async_client.post(
        "/mcp/",
        data=json.dumps(answer),
        content_type="application/json",
        headers={"Accept": HEADERS["Accept"], **session_headers},
    )
    assert response.status_code == status
    assert json.loads(response.content)["error"]["code"] in (-32600, -32001)


@pytest.mark.parametrize("result", ['{"text": "\\ud800 alone"}', '{"n": 123456789012345678901234567890}'])
async def test_a_posted_response_nobody_waits_for_goes_through_the_layer(async_client, result):
    # No handler waits here: the reply is published on the channel layer, whose own encoding (msgpack
    # with channels_redis) refuses lone surrogates and integers past 64 bits.
    session, _ = await initialize(async_client)
    raw = '{"jsonrpc": "2.0", "id": "django-mcp-0", "result": ' + result + "}"
    headers = {"Accept": HEADERS["Accept"], "Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-11-25"}
    response = await async_client.post("/mcp/", data=raw, content_type="application/json", headers=headers)
    assert response.status_code == 202, response.content


@pytest.mark.parametrize("request_id", [{"x": 1}, [1], None, True, 1.5])
async def test_notifications_cancelled_with_an_odd_request_id_is_accepted(async_client, request_id):
    session, _ = await initialize(async_client)
    cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": request_id}}
    response = await post(async_client, cancel, session=session)
    assert response.status_code == 202, response.content


async def test_an_undeclared_capability_is_32021(async_client):
    session, _ = await initialize(async_client, capabilities={})
    status, body = await rpc(async_client, session, "tools/call", {"name": "greet_me"})
    assert (status, body["error"]["code"]) == (200, -32021)


async def test_the_get_stream_carries_subscribed_resource_updates(async_client):
    from django_mcp import anotify_resource_updated

    session, _ = await initialize(async_client, path="/mcp-content/")
    status, body = await rpc(
        async_client, session, "resources/subscribe", {"uri": "test://readme"}, path="/mcp-content/"
    )
    assert (status, body["result"]) == (200, {})
    response = await async_client.get(
        "/mcp-content/", headers={"Mcp-Session-Id": session, "Accept": "text/event-stream"}
    )
    assert response["Content-Type"] == "text/event-stream"
    chunks = response.streaming_content.__aiter__()
    # The first bytes come at once (a comment), once the stream has joined its groups.
    assert await asyncio.wait_for(chunks.__anext__(), 2) == b": open\n\n"
    await anotify_resource_updated("test://readme")
    chunk = await asyncio.wait_for(chunks.__anext__(), 5)
    data = json.loads(chunk.decode().split("data: ", 1)[1])
    assert data == {"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": "test://readme"}}
    await chunks.aclose()


async def test_the_get_stream_needs_a_known_session_and_sse(async_client):
    response = await async_client.get("/mcp/", headers={"Mcp-Session-Id": "nope", "Accept": "text/event-stream"})
    assert response.status_code == 404
    session, _ = await initialize(async_client)
    response = await async_client.get("/mcp/", headers={"Mcp-Session-Id": session, "Accept": "application/json"})
    assert response.status_code == 406


async def test_a_cancelled_notification_stops_the_running_handler(async_client):
    session, _ = await initialize(async_client)
    call = asyncio.ensure_future(
        rpc(async_client, session, "tools/call", {"name": "sleepy", "arguments": {"seconds": 30}}, id=7)
    )
    await until(lambda: EVENTS.get("sleepy") == "started", what="the tool's start")
    cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7}}
    assert (await post(async_client, cancel, session=session)).status_code == 202
    status, body = await asyncio.wait_for(call, 5)
    assert "result" not in body


async def test_bad_initialize_and_batches_are_clear_errors(async_client):
    body = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"capabilities": {}}}
    response = await post(async_client, body)
    assert (response.status_code, json.loads(response.content)["error"]["code"]) == (400, -32602)
    response = await post(async_client, [body], headers={"Mcp-Session-Id": "x"})
    assert (response.status_code, json.loads(response.content)["error"]["code"]) == (400, -32600)


async def test_protocol_versions_setting_is_validated(settings):
    from django_mcp.checks import check_settings

    settings.DJANGO_MCP = {"PROTOCOL_VERSIONS": ["2025-11-25", "1999-01-01"]}
    [error] = check_settings()
    assert error.id == "django_mcp.E002" and "1999-01-01" in error.msg


async def test_both_eras_share_the_first_rungs_and_decode_the_body_once(async_client):
    from unittest import mock

    from django_mcp.protocol import validation
    from tests.wire import post as modern_post
    from tests.wire import request_body

    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25"}}
    response = await post(async_client, init, headers={"Content-Type": "text/plain"})
    assert (response.status_code, json.loads(response.content)["error"]["code"]) == (415, -32600)
    with mock.patch.object(validation, "parse_json", wraps=validation.parse_json) as parse:
        assert (await modern_post(async_client, request_body("server/discover"))).status_code == 200
        await initialize(async_client)
    assert parse.call_count == 3  # discover, initialize, notifications/initialized: once each


async def test_initialize_carries_the_servers_instructions(async_client):
    _, result = await initialize(async_client, path="/mcp-dynamic/")
    assert result["instructions"] == "Hello nobody"  # per request: no X-Tenant header


async def test_initialize_sent_as_a_notification_is_accepted_and_opens_nothing(async_client):
    notice = {"jsonrpc": "2.0", "method": "initialize", "params": initialize_body("2025-11-25", {}, "t")["params"]}
    response = await post(async_client, notice)
    assert response.status_code == 202 and "Mcp-Session-Id" not in response


@pytest.mark.parametrize("method", ["resources/subscribe", "resources/unsubscribe"])
async def test_a_subscription_to_a_uri_that_is_not_a_string_is_32602(async_client, method):
    session, _ = await initialize(async_client, path="/mcp-content/")
    status, body = await rpc(async_client, session, method, {"uri": 7}, path="/mcp-content/")
    assert body["error"]["code"] == -32602
    assert body["error"]["message"] == f"Invalid params for {method}: uri must be a string"
