"""The session store (Django's cache) unreachable: the handshake era answers 503 with a JSON-RPC error,
logs a few lines per outage, and what does not need sessions keeps working."""

from __future__ import annotations

import json
import logging

import pytest
from django.test import override_settings

from tests.test_handshake import HEADERS, initialize, rpc
from tests.wire import call, initialize_body

pytestmark = pytest.mark.django_db(transaction=True)

DOWN = {  # a Redis cache nobody listens for: every operation fails at once (connection refused)
    "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
    "down": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": "redis://127.0.0.1:9/0"},
}


@pytest.fixture(autouse=True)
def _fresh_throttle():
    from django_mcp.server.notify import throttle

    throttle.reset()  # each test sees the first failure of its outage
    yield
    throttle.reset()


@pytest.fixture
def store_down(settings):
    with override_settings(CACHES=DOWN):
        settings.DJANGO_MCP = {**settings.DJANGO_MCP, "SESSION_CACHE": "down"}
        yield


def assert_503(response) -> dict:
    assert response.status_code == 503, response.content
    assert response["Content-Type"].startswith("application/json")
    error = json.loads(response.content)["error"]
    assert error["code"] == -32603 and "session store" in error["message"]
    return error


async def test_every_session_request_answers_503(async_client, settings):
    session, _ = await initialize(async_client)  # made while the store was up
    with override_settings(CACHES=DOWN):
        settings.DJANGO_MCP = {**settings.DJANGO_MCP, "SESSION_CACHE": "down"}
        body = initialize_body("2025-11-25", {}, "outage")
        assert_503(
            await async_client.post(
                "/mcp/", data=json.dumps(body), content_type="application/json", headers={"Accept": HEADERS["Accept"]}
            )
        )
        status, answer = await rpc(async_client, session, "tools/list")
        assert status == 503 and answer["error"]["code"] == -32603
        headers = {"Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-11-25", "Accept": "text/event-stream"}
        assert_503(await async_client.get("/mcp/", headers=headers))
        assert_503(await async_client.delete("/mcp/", headers=headers))


async def test_the_2026_era_keeps_working(async_client, store_down):
    answer = await call(async_client, "tools/call", {"name": "add", "arguments": {"a": 1, "b": 1}})
    assert answer["result"]["content"] == [{"type": "text", "text": "2"}]


async def test_logs_stay_bounded(async_client, store_down, caplog):
    body = json.dumps(initialize_body("2025-11-25", {}, "outage"))
    with caplog.at_level(logging.WARNING):
        for _ in range(20):
            response = await async_client.post(
                "/mcp/", data=body, content_type="application/json", headers={"Accept": HEADERS["Accept"]}
            )
            assert response.status_code == 503
    records = [r.getMessage() for r in caplog.records]
    assert 1 <= len(records) <= 2, records  # one line for the outage, none per request
    assert records[0].startswith("Session store unavailable")


# -- the channel layer down: a reply cannot cross processes, asking still works in this one ------------------


async def test_a_reply_nobody_here_waits_for_answers_503_when_the_layer_is_down(async_client):
    from unittest import mock

    from channels.layers import get_channel_layer

    session, _ = await initialize(async_client)
    answer = {"jsonrpc": "2.0", "id": "django-mcp-x", "result": {"action": "accept"}}
    headers = {"Accept": HEADERS["Accept"], "Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-11-25"}
    with mock.patch.object(get_channel_layer(), "group_send", side_effect=ConnectionError("redis went away")):
        response = await async_client.post(
            "/mcp/", data=json.dumps(answer), content_type="application/json", headers=headers
        )
    assert response.status_code == 503
    assert "channel layer" in json.loads(response.content)["error"]["message"]


async def test_asking_a_client_works_in_one_process_without_the_layer(async_client):
    import asyncio
    from unittest import mock

    from channels.layers import get_channel_layer

    from django_mcp.handshake import _pending

    session, _ = await initialize(async_client)
    with mock.patch.object(get_channel_layer(), "new_channel", side_effect=ConnectionError("redis went away")):
        call = asyncio.ensure_future(rpc(async_client, session, "tools/call", {"name": "greet_me"}))
        for _ in range(200):
            if _pending:
                break
            await asyncio.sleep(0.01)
        ((_, request_id),) = list(_pending)
        answer = {"jsonrpc": "2.0", "id": request_id, "result": {"action": "accept", "content": {"name": "Ada"}}}
        headers = {"Accept": HEADERS["Accept"], "Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-11-25"}
        posted = await async_client.post(
            "/mcp/", data=json.dumps(answer), content_type="application/json", headers=headers
        )
        assert posted.status_code == 202
        status, body = await call
    assert body["result"]["content"] == [{"type": "text", "text": "Hello Ada"}]
