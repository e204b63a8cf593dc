"""Rate limits per caller: DJANGO_MCP["RATE_LIMIT"] for every request, @tool(rate_limit=...) per tool;
429 with Retry-After and a JSON-RPC error, in both eras; a cache that cannot count; the checks."""

from __future__ import annotations

import json
import uuid
from unittest import mock

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import User
from django.test import override_settings

from django_mcp import DefinitionError, McpServer, ToolRegistry
from django_mcp.checks import check_rate_limit_cache, check_settings
from django_mcp.conf import split_rate
from django_mcp.models import PersonalToken
from tests.wire import assert_wire, post, request_body

pytestmark = pytest.mark.django_db(transaction=True)

PATH = "/mcp-oauth"


async def caller() -> str:
    """A personal token of a user of its own: its counters start at zero (the cache outlives tests)."""
    user = await sync_to_async(User.objects.create_user)(f"rate-{uuid.uuid4().hex[:8]}")
    _, token = await sync_to_async(PersonalToken.issue)(user, "rates")
    return token


async def send(client, token, method="tools/list", params=None):
    body = request_body(method, params)
    return await post(client, body, path=PATH, headers={"Authorization": f"Bearer {token}"})


@override_settings(DJANGO_MCP={"RATE_LIMIT": "3/m"})
async def test_past_the_rate_a_caller_gets_429_with_retry_after_and_others_do_not(async_client):
    alice, bob = await caller(), await caller()
    for _ in range(3):
        assert (await send(async_client, alice)).status_code == 200
    refused = await send(async_client, alice)
    assert refused.status_code == 429
    body = json.loads(refused.content)
    assert_wire(body, "JSONRPCErrorResponse")
    retry = body["error"]["data"]["retryAfterSeconds"]
    assert 1 <= retry <= 60 and refused["Retry-After"] == str(retry)
    assert body["error"]["message"] == f"Rate limit exceeded: at most 3/m requests per caller; retry in {retry} s"
    assert (await send(async_client, bob)).status_code == 200


async def test_a_tools_own_rate_counts_its_calls_only(async_client):
    token = await caller()
    call = {"name": "limited"}
    for _ in range(2):
        answer = json.loads((await send(async_client, token, "tools/call", call)).content)
        assert answer["result"]["content"][0]["text"] == "ok"
    refused = await send(async_client, token, "tools/call", call)
    assert refused.status_code == 429
    assert "at most 2/m calls of 'limited' per caller" in json.loads(refused.content)["error"]["message"]
    assert (await send(async_client, token, "tools/call", {"name": "whoami"})).status_code == 200


@override_settings(DJANGO_MCP={"RATE_LIMIT": "2/m"})  # initialize counts, then one request
async def test_the_handshake_era_answers_in_band_with_retry_after(async_client):
    from tests.wire import open_session

    token = await caller()
    session = await open_session(async_client, PATH, token)
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}
    first = await async_client.post(PATH, data=json.dumps(call), content_type="application/json", headers=session)
    assert first.status_code == 200 and "result" in json.loads(first.content)
    second = await async_client.post(PATH, data=json.dumps(call), content_type="application/json", headers=session)
    assert second.status_code == 200  # in-band in a live session: handshake-era clients read other codes as broken
    assert json.loads(second.content)["error"]["data"]["retryAfterSeconds"] >= 1 and second["Retry-After"]


@override_settings(DJANGO_MCP={"RATE_LIMIT": "2/m"})
async def test_initialize_counts_against_the_rate_and_is_refused_past_it(async_client):
    # Each initialize opens a session, which costs a place in the session store: it is a request like any other.
    token = await caller()
    headers = {"Authorization": f"Bearer {token}"}
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize"}
    init["params"] = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    answers = [
        await async_client.post(PATH, data=json.dumps(init), content_type="application/json", headers=headers)
        for _ in range(3)
    ]
    assert [a.status_code for a in answers] == [200, 200, 429]
    refused = json.loads(answers[2].content)
    assert refused["id"] == 0 and refused["error"]["data"]["retryAfterSeconds"] >= 1
    assert answers[2]["Retry-After"] and "Mcp-Session-Id" not in answers[2]
    assert (await send(async_client, await caller())).status_code == 200  # another caller is not held back


@pytest.mark.parametrize("rate", ["3", "3/fortnight", "0/m", "x/m", "3/0s", "3/minute", "3/min"])
def test_a_bad_rate_is_e002_and_a_definition_error(rate):
    with override_settings(DJANGO_MCP={"RATE_LIMIT": rate}):
        [error] = check_settings()
    assert error.id == "django_mcp.E002" and "Invalid rate" in error.msg
    with pytest.raises(DefinitionError, match="Invalid rate"):
        ToolRegistry().register(lambda request: 1, name="t", rate_limit=rate)


@pytest.mark.parametrize("rate", ["600/m", "10/30s", "1/h", "5/d", "100/s", "5/30", "7/2m"])
def test_rates_as_django_ratelimit_reads_them(rate):
    from django_ratelimit.core import _split_rate

    ToolRegistry().register(lambda request: 1, name="t", rate_limit=rate)
    assert split_rate(rate) == _split_rate(rate)  # counted as django-ratelimit reads it


def test_e017_a_rate_limit_cache_that_does_not_exist_and_w017_a_per_process_one():
    with override_settings(DJANGO_MCP={"RATE_LIMIT": "10/m"}, RATELIMIT_USE_CACHE="nope"):
        assert [m.id for m in check_rate_limit_cache()] == ["django_mcp.E017"]
    locmem = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
    with override_settings(DJANGO_MCP={"RATE_LIMIT": "10/m"}, CACHES=locmem, DEBUG=False):
        assert [m.id for m in check_rate_limit_cache()] == ["django_mcp.W017"]
    with override_settings(DJANGO_MCP={"RATE_LIMIT": "10/m"}, CACHES=locmem, DEBUG=True):
        assert check_rate_limit_cache() == []
    tools = ToolRegistry()
    tools.register(lambda request: 1, name="t", rate_limit="1/m")
    server = McpServer(tools=tools, urls_namespace="rate_check")
    with (
        override_settings(CACHES=locmem, DEBUG=False),
        mock.patch("django_mcp.checks.built_servers", return_value=[server]),
    ):
        assert [m.id for m in check_rate_limit_cache()] == ["django_mcp.W017"]  # a tool's own limit counts too
    with mock.patch("django_mcp.checks.built_servers", return_value=[]):
        assert check_rate_limit_cache() == []


@override_settings(
    DJANGO_MCP={"RATE_LIMIT": "3/m"}, CACHES={"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
)
async def test_a_cache_that_cannot_count_answers_503(async_client):
    """(A Redis that is down: test_a_redis_that_is_down_answers_503_and_counting_resumes_when_it_is_back.)"""
    token = await caller()
    with (
        mock.patch("django.core.cache.backends.locmem.LocMemCache.add", side_effect=ConnectionError),
        mock.patch("django.core.cache.backends.locmem.LocMemCache.incr", side_effect=ValueError),
    ):
        response = await send(async_client, token)
    assert response.status_code == 503 and response["Retry-After"] == "2"
    assert json.loads(response.content)["error"]["message"] == "Rate limits cannot be counted now: try again shortly"


async def test_counting_in_redis_reuses_one_connection_and_stays_exact(async_client, private_redis):
    """django-ratelimit read ``caches[alias]``, a new RedisCache (and connection) per request under ASGI."""
    import redis

    location = f"redis://127.0.0.1:{private_redis.port}/0"
    caches = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": location}}
    token = await caller()
    with override_settings(CACHES=caches, DJANGO_MCP={"RATE_LIMIT": "20/m"}):
        stats = redis.Redis(port=private_redis.port)
        before = int(stats.info("stats")["total_connections_received"])
        answers = [(await send(async_client, token)).status_code for _ in range(21)]
        opened = int(stats.info("stats")["total_connections_received"]) - before
    assert answers == [200] * 20 + [429]
    assert opened <= 2, opened  # the counting thread's one connection (and the session's mark read, if any)


def _redis_cache(port: int) -> dict:
    location = f"redis://127.0.0.1:{port}/0"
    return {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": location}}


async def test_counting_in_redis_is_one_round_trip_on_the_loop_and_the_caches_own_counter(async_client, private_redis):
    """The window's counter is the key and value Django's add and incr would write, with the window's expiry."""
    import redis

    token = await caller()
    # A day's window: django-ratelimit's windows end at a time of their own (per key); a test running
    # across that moment would start counting again.
    with override_settings(CACHES=_redis_cache(private_redis.port), DJANGO_MCP={"RATE_LIMIT": "5/d"}):
        stats = redis.Redis(port=private_redis.port)
        before = int(stats.info("commandstats").get("cmdstat_incrby", {}).get("calls", 0))
        with mock.patch("django_mcp.server.rates.sync_to_async", side_effect=AssertionError("a thread hop")):
            assert [(await send(async_client, token)).status_code for _ in range(3)] == [200] * 3
        counted = int(stats.info("commandstats")["cmdstat_incrby"]["calls"]) - before
        keys = list(stats.scan_iter("*django_mcp:rate:*"))
        assert counted == 3 and len(keys) == 1
        assert 86400 < stats.ttl(keys[0]) <= 86405  # the window and django-ratelimit's 5 s beyond it
        from django.core.cache import cache

        name = keys[0].decode().split(":", 2)[2]  # Django's key without its prefix and version
        assert await sync_to_async(cache.get)(name) == 3  # what the cache's add and incr read and write
        await sync_to_async(cache.incr)(name)
        assert [(await send(async_client, token)).status_code for _ in range(2)] == [200, 429]


async def test_a_redis_that_is_down_answers_503_and_counting_resumes_when_it_is_back(async_client, private_redis):
    token = await caller()
    with override_settings(CACHES=_redis_cache(private_redis.port), DJANGO_MCP={"RATE_LIMIT": "5/m"}):
        assert (await send(async_client, token)).status_code == 200
        private_redis.stop()
        try:
            response = await send(async_client, token)
            assert response.status_code == 503 and response["Retry-After"] == "2"
            assert json.loads(response.content)["error"]["message"] == (
                "Rate limits cannot be counted now: try again shortly"
            )
        finally:
            private_redis.start()
        assert (await send(async_client, token)).status_code == 200


LOCMEM = "django.core.cache.backends.locmem.LocMemCache"
IN_MEMORY = {"default": {"BACKEND": LOCMEM}}  # the patches below meet this backend, whatever the suite's is


@override_settings(DJANGO_MCP={"RATE_LIMIT": "1/m"}, RATELIMIT_ENABLE=False)
async def test_ratelimit_enable_off_counts_nothing(async_client):
    token = await caller()
    assert [(await send(async_client, token)).status_code for _ in range(3)] == [200, 200, 200]


@override_settings(DJANGO_MCP={"RATE_LIMIT": "3/m"}, CACHES=IN_MEMORY)
async def test_a_counter_that_expires_between_add_and_incr_opens_a_new_window(async_client):
    token = await caller()
    with (
        mock.patch(f"{LOCMEM}.add", side_effect=[False, True]),
        mock.patch(f"{LOCMEM}.incr", side_effect=ValueError("gone")),
    ):
        assert (await send(async_client, token)).status_code == 200


@pytest.mark.parametrize("fail_open, status", [(False, 503), (True, 200)])
async def test_a_cache_that_will_not_count_fails_closed_unless_told_open(async_client, fail_open, status):
    token = await caller()
    with (
        override_settings(DJANGO_MCP={"RATE_LIMIT": "3/m"}, RATELIMIT_FAIL_OPEN=fail_open, CACHES=IN_MEMORY),
        mock.patch(f"{LOCMEM}.add", return_value=False),
        mock.patch(f"{LOCMEM}.incr", side_effect=ValueError("gone")),
    ):
        response = await send(async_client, token)
    assert response.status_code == status
    if status == 503:
        said = json.loads(response.content)["error"]["message"]
        assert said == "Rate limits cannot be counted now: try again shortly"


async def test_counts_asked_together_share_a_round_trip_and_each_stays_exact(private_redis):
    """At 16 concurrent requests a round trip per count cost the loop most of what counting costs; the counts
    asked while one round trip is on its way go in the next, each its own INCRBY."""
    import asyncio

    from django_mcp.server import rates
    from django_mcp.server.rates import _acount_in_redis
    from django_mcp.shared_caches import async_redis_of, shared_cache

    with override_settings(CACHES=_redis_cache(private_redis.port)):
        client = async_redis_of(shared_cache("default"))
        with mock.patch.object(rates, "_aincr_on", wraps=rates._aincr_on) as round_trips:
            counts = await asyncio.gather(*(_acount_in_redis(client, key, 60) for key in ["a", "b"] * 50))
        await client.aclose()
    for name in ("a", "b"):
        assert sorted(c for c, key in zip(counts, ["a", "b"] * 50, strict=True) if key == name) == list(range(1, 51))
    assert 1 <= round_trips.call_count <= 2, round_trips.call_count  # the first count's, then everyone else's


async def test_a_lone_count_is_an_incr_and_the_count_opening_a_window_sets_its_expiry(private_redis):
    """redis-py's pipeline cost the loop more than the round trip itself: a count alone goes without one."""
    import redis

    from django_mcp.server.rates import _acount_in_redis
    from django_mcp.shared_caches import async_redis_of, shared_cache

    with override_settings(CACHES=_redis_cache(private_redis.port)):
        client = async_redis_of(shared_cache("default"))
        stats = redis.Redis(port=private_redis.port)
        before = stats.info("commandstats")
        with mock.patch.object(client, "pipeline", side_effect=AssertionError("a pipeline for one count")):
            assert [await _acount_in_redis(client, "lone", 60) for _ in range(3)] == [1, 2, 3]
        after = stats.info("commandstats")
        assert 60 < await client.ttl("lone") <= 65  # the window and django-ratelimit's 5 s beyond it
        await client.aclose()
    sent = {name: after[name]["calls"] - before.get(name, {}).get("calls", 0) for name in after}
    counted = {name: sent.get(f"cmdstat_{name}", 0) for name in ("incrby", "expire", "set", "eval", "evalsha")}
    assert counted == {"incrby": 3, "expire": 1, "set": 0, "eval": 0, "evalsha": 0}


async def test_every_count_of_a_batch_learns_that_redis_is_down_and_the_next_batch_is_sent(private_redis):
    import asyncio

    import redis

    from django_mcp.server.rates import _acount_in_redis
    from django_mcp.shared_caches import async_redis_of, shared_cache

    with override_settings(CACHES=_redis_cache(private_redis.port)):
        client = async_redis_of(shared_cache("default"))
        private_redis.stop()
        try:
            outcomes = await asyncio.gather(
                *(_acount_in_redis(client, "down", 60) for _ in range(5)), return_exceptions=True
            )
        finally:
            private_redis.start()
        assert all(isinstance(outcome, redis.exceptions.ConnectionError) for outcome in outcomes), outcomes
        assert await asyncio.wait_for(_acount_in_redis(client, "down", 60), 10) == 1
        await client.aclose()


async def test_the_counting_connection_redis_dropped_between_counts_is_replaced_unseen(private_redis):
    """The counts keep a connection of their own: after a Redis restart the next count goes on a new one,
    with no request answered 503 (as redis-py's client retries a dropped connection)."""
    from django_mcp.server.rates import _acount_in_redis
    from django_mcp.shared_caches import async_redis_of, shared_cache

    with override_settings(CACHES=_redis_cache(private_redis.port)):
        client = async_redis_of(shared_cache("default"))
        assert await _acount_in_redis(client, "restarted", 60) == 1
        private_redis.stop()
        private_redis.start()
        assert await _acount_in_redis(client, "restarted", 60) in (1, 2)  # 1 unless Redis kept its data
        assert await _acount_in_redis(client, "restarted", 60) in (2, 3)
        await client.aclose()


async def test_a_count_whose_request_went_away_leaves_the_others_theirs(private_redis):
    import asyncio

    from django_mcp.server.rates import _acount_in_redis
    from django_mcp.shared_caches import async_redis_of, shared_cache

    with override_settings(CACHES=_redis_cache(private_redis.port)):
        client = async_redis_of(shared_cache("default"))
        first = asyncio.ensure_future(_acount_in_redis(client, "gone", 60))
        gone = asyncio.ensure_future(_acount_in_redis(client, "gone", 60))
        last = asyncio.ensure_future(_acount_in_redis(client, "gone", 60))
        await asyncio.sleep(0)  # all three asked: the first in flight, the others waiting for the next pipeline
        gone.cancel()
        assert sorted(await asyncio.gather(first, last)) == [1, 3]  # the gone request was counted, not answered
        await client.aclose()


async def test_counts_of_a_batch_whose_sending_is_cancelled_do_not_wait_forever(monkeypatch):
    """The loop closing cancels a batch's pipeline on its way: its requests end too (never a hung request)."""
    import asyncio

    from django_mcp.server import rates

    async def never_answered(connection, counts):
        await asyncio.Event().wait()

    class Pool:
        async def get_connection(self):
            return object()

    monkeypatch.setattr(rates, "_aincr_on", never_answered)
    counts, client = rates._RedisCounts(), mock.Mock(connection_pool=Pool())
    first = asyncio.ensure_future(counts.count(client, "k", 60))
    await asyncio.sleep(0)  # its own pipeline on its way
    waiting = asyncio.ensure_future(counts.count(client, "k", 60))
    await asyncio.sleep(0)  # waits for the next pipeline
    first.cancel()  # its request went away: the waiting count goes out in a batch of its own
    await asyncio.gather(first, return_exceptions=True)
    [sending] = [task for task in asyncio.all_tasks() if task.get_coro().__qualname__ == "_RedisCounts._asend"]
    sending.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(waiting, 5)
