"""The session store (Django's cache) unreachable: the handshake era answers 503 with a JSON-RPC error,
logs a few lines per outage, and what does not need sessions keeps working."""

from __future__ import annotations

import asyncio
import json
import logging

import pytest
from django.test import override_settings

from tests.session_calls import HEADERS, initialize, rpc
from tests.wire import AsgiAnswer, call, initialize_body, post_from

pytestmark = pytest.mark.django_db(transaction=True)

DOWN = {  # a Redis cache nobody listens for: every operation fails at once (connection refused)
    "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
    "down": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": "redis://127.0.0.1:9/0"},
}


@pytest.fixture(autouse=True)
def _fresh_throttle():
    from django_mcp.server.outages import throttle

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
    assert response["Content-Type"].startswith("application/json") and response["Retry-After"] == "2"
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


@pytest.mark.parametrize("request_id", ["django-mcp-\ud800", 7, "someone-elses-1", None])
async def test_a_reply_to_no_request_this_server_could_have_sent_is_a_400(async_client, request_id):
    # A lone surrogate could not cross a Redis layer (msgpack): it answered 503 "channel layer unavailable".
    session, _ = await initialize(async_client)
    answer = {"jsonrpc": "2.0", "id": request_id, "result": {"action": "accept"}}
    headers = {"Accept": HEADERS["Accept"], "Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-11-25"}
    body = json.dumps(answer)  # ensure_ascii: the lone surrogate travels as \ud800, as a client's would
    response = await async_client.post("/mcp/", data=body, content_type="application/json", headers=headers)
    assert response.status_code == 400, response.content
    assert "id of a request this server sent" in json.loads(response.content)["error"]["message"]


# -- bounded sessions ---------------------------------------------------------------------------------


async def open_session(client, capabilities=None, client_addr="127.0.0.1") -> AsgiAnswer:
    """initialize from ``client_addr``."""
    body = initialize_body("2025-11-25", capabilities if capabilities is not None else {}, "bounds")
    return await post_from(client_addr, body, "/mcp/", modern=False)


@pytest.fixture
def bounds(settings):
    from django.core.cache import caches

    caches["default"].clear()

    def set_bounds(**values):
        settings.DJANGO_MCP = {**settings.DJANGO_MCP, **values}

    yield set_bounds
    caches["default"].clear()


def test_the_session_caps_are_on_by_default():
    from django_mcp.conf import McpSettings

    defaults = McpSettings()
    assert (defaults.SESSION_MAX_BYTES, defaults.SESSIONS_PER_PRINCIPAL, defaults.SESSIONS_MAX) == (65536, 1000, 10_000)


async def test_a_session_bigger_than_session_max_bytes_is_refused(async_client, bounds):
    response = await open_session(async_client, {"experimental": {"blob": "x" * 70_000}})
    assert response.status_code == 400
    error = json.loads(response.content)["error"]
    assert error["code"] == -32602 and "at most 65536" in error["message"]
    assert "Mcp-Session-Id" not in response


async def test_subscriptions_cannot_grow_a_session_past_its_bound(async_client, bounds):
    bounds(SESSION_MAX_BYTES=1024)
    session, _ = await initialize(async_client, path="/mcp-content/")
    codes = []
    for n in range(30):
        status, body = await rpc(
            async_client, session, "resources/subscribe", {"uri": f"test://items/{n:040d}"}, path="/mcp-content/"
        )
        codes.append(body.get("error", {}).get("code"))
    assert -32602 in codes  # refused in-band once the session would pass 1024 bytes


async def test_one_principal_keeps_at_most_sessions_per_principal(async_client, bounds):
    bounds(SESSIONS_PER_PRINCIPAL=3)
    opened = [await open_session(async_client) for _ in range(3)]
    assert [r.status_code for r in opened] == [200, 200, 200]
    refused = await open_session(async_client)
    assert refused.status_code == 429
    assert "Too many sessions" in json.loads(refused.content)["error"]["message"]
    # Ending one makes room; another address is another anonymous caller (for limits only).
    assert (await open_session(async_client, client_addr="10.0.0.2")).status_code == 200
    headers = {"Mcp-Session-Id": opened[0]["Mcp-Session-Id"], "MCP-Protocol-Version": "2025-11-25"}
    assert (await async_client.delete("/mcp/", headers=headers)).status_code in (200, 204)
    assert (await open_session(async_client)).status_code == 200


async def test_a_flood_is_refused_and_evicts_no_live_session(async_client, bounds):
    bounds(SESSIONS_PER_PRINCIPAL=100, SESSIONS_MAX=10_000)
    session, _ = await initialize(async_client)
    statuses = [(await open_session(async_client)).status_code for _ in range(150)]
    assert statuses.count(429) >= 50  # 100 per principal (this address)
    status, body = await rpc(async_client, session, "ping")
    assert (status, body["result"]) == (200, {})  # the first session is still there


async def test_openings_one_caller_is_refused_do_not_count_against_the_server(async_client, bounds):
    bounds(SESSIONS_MAX=5, SESSIONS_PER_PRINCIPAL=1)
    mine = [(await open_session(async_client, client_addr="10.9.9.9")).status_code for _ in range(6)]
    assert mine == [200, 429, 429, 429, 429, 429]
    assert (await open_session(async_client, client_addr="10.1.1.1")).status_code == 200  # not 503


async def test_sessions_max_bounds_what_the_server_opens(async_client, bounds):
    bounds(SESSIONS_MAX=4, SESSIONS_PER_PRINCIPAL=None)
    statuses = [(await open_session(async_client, client_addr=f"10.0.1.{n}")).status_code for n in range(6)]
    assert statuses == [200, 200, 200, 200, 503, 503]


async def test_concurrent_openings_of_one_caller_stop_exactly_at_its_cap(async_client, bounds):
    # Counted read-modify-write, concurrent initialize from one address opened 3,000 sessions past a cap of 1,000.
    bounds(SESSIONS_PER_PRINCIPAL=5, SESSIONS_MAX=None)
    answers = await asyncio.gather(*(open_session(async_client, client_addr="10.7.7.7") for _ in range(40)))
    statuses = [a.status_code for a in answers]
    assert (statuses.count(200), statuses.count(429)) == (5, 35), statuses


async def test_one_address_cannot_use_up_the_servers_sessions_for_others(async_client, bounds):
    bounds(SESSIONS_PER_PRINCIPAL=3, SESSIONS_MAX=5)
    flood = await asyncio.gather(*(open_session(async_client, client_addr="10.6.6.6") for _ in range(60)))
    assert [a.status_code for a in flood].count(200) == 3
    others = [(await open_session(async_client, client_addr=f"10.5.5.{n}")).status_code for n in range(3)]
    assert others == [200, 200, 503]  # the server's 5: the flood took 3 of them, not all


async def test_ending_a_session_gives_its_place_back_on_the_server_too(async_client, bounds):
    bounds(SESSIONS_MAX=2, SESSIONS_PER_PRINCIPAL=None)
    first = await open_session(async_client, client_addr="10.4.4.1")
    assert (await open_session(async_client, client_addr="10.4.4.2")).status_code == 200
    assert (await open_session(async_client, client_addr="10.4.4.3")).status_code == 503
    headers = {"Mcp-Session-Id": first["Mcp-Session-Id"], "MCP-Protocol-Version": "2025-11-25"}
    assert (await async_client.delete("/mcp/", headers=headers)).status_code in (200, 204)
    assert (await open_session(async_client, client_addr="10.4.4.3")).status_code == 200


def test_w014_a_culling_cache_too_small_for_sessions_max(settings):
    from django_mcp.checks import check_session_cache_size

    settings.DEBUG = False
    settings.DJANGO_MCP = {**settings.DJANGO_MCP, "SESSIONS_MAX": 10_000}  # the default (tests turn it off)
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
    (warning,) = check_session_cache_size()
    assert warning.id == "django_mcp.W014" and "culls past 300 entries" in warning.msg
    settings.CACHES = {
        "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "OPTIONS": {"MAX_ENTRIES": 50_000}}
    }
    assert check_session_cache_size() == []
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": "redis://x"}}
    assert check_session_cache_size() == []
    settings.DEBUG = True
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
    assert check_session_cache_size() == []


@pytest.mark.parametrize("session_id", ["", "x" * 129])
async def test_an_id_no_session_can_have_reads_as_unknown_without_the_store(session_id):
    from django_mcp.transport import sessions

    assert await sessions.aload(session_id, "owner") is None


async def test_a_stored_value_that_is_not_a_session_reads_as_unknown():
    from django_mcp.shared_caches import shared_cache
    from django_mcp.transport import sessions

    cache = shared_cache("default")
    await cache.aset(sessions._PREFIX + "not-a-session", {"something": "else"}, 60)
    await cache.aset(sessions._PREFIX + "not-a-dict", ["a", "list"], 60)
    assert await sessions.aload("not-a-session", "owner") is None
    assert await sessions.aload("not-a-dict", "owner") is None


async def test_the_store_back_after_an_outage_is_logged_once(async_client, settings, caplog):
    with override_settings(CACHES=DOWN):
        settings.DJANGO_MCP = {**settings.DJANGO_MCP, "SESSION_CACHE": "down"}
        assert (await post_from("10.0.0.1", initialize_body("2025-11-25", {}, "t"), "/mcp/")).status_code == 503
    settings.DJANGO_MCP = {**settings.DJANGO_MCP, "SESSION_CACHE": "default"}
    with caplog.at_level(logging.INFO, "django_mcp"):
        await initialize(async_client)
        await initialize(async_client)
    assert caplog.text.count("Session store reachable again") == 1
