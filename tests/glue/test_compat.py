"""The private API ``django_mcp/compat.py`` reaches for is still there, in the shape it expects."""

from __future__ import annotations

import inspect
import os

import pytest

from django_mcp import compat


def test_django_still_reads_the_logged_flag_of_a_response():
    from django.http import HttpResponse
    from django.utils.log import log_response

    assert "_has_been_logged" in inspect.getsource(log_response)
    response = HttpResponse()
    compat.mark_logged(response)
    assert response._has_been_logged is True


def test_a_real_requests_body_is_a_stream_and_a_mock_ones_is_not():
    from django.core.handlers.asgi import ASGIRequest
    from django.core.handlers.wsgi import WSGIRequest
    from django.test import RequestFactory

    assert "self._stream" in inspect.getsource(ASGIRequest.__init__)
    assert "self._stream" in inspect.getsource(WSGIRequest.__init__)
    assert compat.has_body_stream(RequestFactory().post("/", b"{}", content_type="application/json"))


def test_djangos_sqlite_backend_still_keeps_its_init_commands():
    from django.db import connections
    from django.db.backends.sqlite3.base import DatabaseWrapper

    settings = {**connections["default"].settings_dict, "NAME": ":memory:"}
    settings["OPTIONS"] = {"init_command": "PRAGMA foreign_keys = ON"}
    database = DatabaseWrapper(settings, "compat")
    database.get_connection_params()
    assert compat.sqlite_init_commands(database) == ("PRAGMA foreign_keys = ON",)


async def test_asgiref_still_maps_thread_sensitive_contexts_to_their_executors():
    from asgiref.sync import ThreadSensitiveContext, sync_to_async

    assert compat.request_thread_executors() is not None
    async with ThreadSensitiveContext():
        await sync_to_async(lambda: None)()
        context, executors = compat.request_thread_executors()
        assert context is not None and context in executors


@pytest.mark.skipif(not os.environ.get("REDIS_URL"), reason="needs Redis")
async def test_channels_redis_pubsub_layer_still_has_shards_with_a_pubsub_connection():
    from channels_redis.pubsub import RedisPubSubChannelLayer

    layer = RedisPubSubChannelLayer(hosts=[os.environ["REDIS_URL"]])
    assert compat.redis_subscriber_connections(layer) == []  # nothing subscribed yet
    channel = await layer.new_channel()
    try:
        await layer.group_add("django-mcp-compat", channel)
        connections = compat.redis_subscriber_connections(layer)
        assert connections and all(hasattr(c, "register_connect_callback") for c in connections)
    finally:
        await layer.group_discard("django-mcp-compat", channel)
        await layer.flush()


def test_ninja_still_builds_a_scratch_response_the_view_overrides():
    from ninja import NinjaAPI

    assert "create_temporal_response" in vars(NinjaAPI)
    assert list(inspect.signature(NinjaAPI.create_temporal_response).parameters) == ["self", "request"]


def test_psycopg_pool_still_keeps_its_idle_connections_in_a_deque():
    from collections import deque

    from psycopg_pool import AsyncConnectionPool

    pool = AsyncConnectionPool("dbname=unused", min_size=1, open=False)
    assert isinstance(pool._pool, deque)
    idle = object()
    pool._pool.append(idle)
    assert compat.pool_idle_connections(pool) == [idle] and not pool._pool  # taken out, as close() does
    assert compat.pool_idle_connections(object()) == []


def test_ninja_still_lists_the_operations_bound_to_an_api():
    from ninja import NinjaAPI, Router

    api, router, nested = NinjaAPI(urls_namespace="compat_ninja"), Router(auth=lambda request: True), Router()

    @router.get("/a")
    def a(request):
        return {}

    @nested.post("/b")
    def b(request):
        return {}

    router.add_router("/nested", nested)
    api.add_router("/r", router)
    found = compat.ninja_operations(api)
    assert [(owner, operation.view_func) for owner, operation in found] == [(router, a), (nested, b)]
    assert all(operation.api is api for _, operation in found)
    assert found[1][1].auth_callbacks == found[0][1].auth_callbacks != []  # the nested one inherits the auth


def test_csrf_middleware_still_honours_the_flag_that_skips_its_check():
    from django.middleware.csrf import CsrfViewMiddleware
    from django.test import RequestFactory

    request = RequestFactory().post("/", {}, HTTP_COOKIE="csrftoken=x")
    middleware = CsrfViewMiddleware(lambda r: None)
    assert middleware.process_view(request, lambda r: None, (), {}) is not None  # refused without a token
    request = RequestFactory().post("/", {})
    compat.skip_csrf_check(request)
    assert middleware.process_view(request, lambda r: None, (), {}) is None


def test_djangos_redis_cache_still_keeps_its_servers_and_options():
    from django.core.cache.backends.locmem import LocMemCache
    from django.core.cache.backends.redis import RedisCache

    cache = RedisCache(
        "redis://127.0.0.1:6390/2,redis://127.0.0.1:6391/2",
        {"OPTIONS": {"pool_class": "redis.BlockingConnectionPool", "socket_timeout": 3}},
    )
    assert compat.redis_cache_primary(cache) == ("redis://127.0.0.1:6390/2", {"socket_timeout": 3})
    assert compat.redis_cache_primary(LocMemCache("here", {})) is None
