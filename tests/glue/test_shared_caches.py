"""One cache object per process for the caches every request reads (sessions, requestStates, the
revocation mark): Django's ``caches[alias]`` builds one per asyncio task, and a RedisCache object
opens its own connection."""

from __future__ import annotations

import asyncio
import threading
import uuid

import pytest
import redis
from django.core.cache import InvalidCacheBackendError, caches
from django.test import override_settings

from django_mcp.server.mrtr import aconsume_state
from django_mcp.shared_caches import shared_cache

LOCMEM = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}


def _redis_caches(port: int) -> dict:
    return {
        "default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": f"redis://127.0.0.1:{port}/0"}
    }


def _connections_received(port: int) -> int:
    return int(redis.Redis(port=port).info("stats")["total_connections_received"])


async def test_requests_share_one_redis_connection_pool(private_redis):
    with override_settings(CACHES=_redis_caches(private_redis.port)):
        before = _connections_received(private_redis.port)
        for _ in range(50):  # fifty requests' worth of requestState records, each in its own task as a request is
            await asyncio.create_task(aconsume_state(uuid.uuid4().hex, 60))
        opened = _connections_received(private_redis.port) - before - 1  # less this count's own connection
    # Django's per-task objects opened a connection per request (50); the shared pool keeps its one.
    assert opened == 1, opened


@override_settings(CACHES=LOCMEM)
async def test_one_object_for_every_task_and_thread():
    here = shared_cache("default")
    elsewhere: list[object] = []
    thread = threading.Thread(target=lambda: elsewhere.append(shared_cache("default")))
    thread.start()
    thread.join()

    async def in_a_task() -> object:
        return shared_cache("default")

    assert await asyncio.create_task(in_a_task()) is here
    assert elsewhere == [here]
    assert caches["default"] is not here  # Django's own stays per task


def test_a_backend_not_known_to_be_shareable_is_used_as_django_hands_it_out(tmp_path):
    files = {"default": {"BACKEND": "django.core.cache.backends.filebased.FileBasedCache", "LOCATION": str(tmp_path)}}
    with override_settings(CACHES=files):
        assert shared_cache("default") is caches["default"]


def test_new_cache_settings_make_a_new_object():
    with override_settings(CACHES=LOCMEM):
        first = shared_cache("default")
    with override_settings(CACHES={"default": {**LOCMEM["default"], "LOCATION": "elsewhere"}}):
        assert shared_cache("default") is not first
        assert shared_cache("default")._cache is not first._cache  # the other location's store


def test_an_alias_that_is_not_configured_is_djangos_error():
    with override_settings(CACHES=LOCMEM), pytest.raises(InvalidCacheBackendError):
        shared_cache("nowhere")


async def test_a_burst_of_rate_counts_waits_for_a_few_connections_instead_of_failing(private_redis):
    """redis-py's asyncio pool refuses a 101st connection ("Too many connections"): 300 requests counted at once
    would have answered 503. The loop's client waits for one of its few connections instead."""
    from django_mcp.server.rates import _acount_in_redis
    from django_mcp.shared_caches import async_redis_of

    with override_settings(CACHES=_redis_caches(private_redis.port)):
        client = async_redis_of(shared_cache("default"))
        assert client is async_redis_of(shared_cache("default"))  # one per loop
        before = _connections_received(private_redis.port)
        counts = await asyncio.gather(*(_acount_in_redis(client, "burst", 60) for _ in range(300)))
        opened = _connections_received(private_redis.port) - before - 1  # less the one asking for the figure
        await client.aclose()
    assert sorted(counts) == list(range(1, 301))
    assert 1 <= opened <= 20, opened


async def test_another_cache_has_no_asyncio_client():
    from django_mcp.shared_caches import async_redis_of

    with override_settings(CACHES=LOCMEM):
        assert async_redis_of(shared_cache("default")) is None
