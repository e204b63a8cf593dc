"""The Django caches django_mcp reads on every request, one object per process and alias.

Django hands each thread and each asyncio task its own cache object (``caches[alias]``), so under ASGI
every request builds a new one; a ``RedisCache`` object holds its own connection pool, so each request
then opens a TCP connection to Redis and leaves it for the garbage collector (Django ticket #33625).
The backends named here lock or pool inside, so one object serves every thread and task of the process;
any other backend is used as Django hands it out.
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from typing import Any

from django.conf import settings
from django.core.cache import BaseCache, caches
from django.core.signals import setting_changed

from .compat import redis_cache_primary

SHAREABLE_BACKENDS = frozenset(
    {
        "django.core.cache.backends.redis.RedisCache",
        "django.core.cache.backends.locmem.LocMemCache",
        "django.core.cache.backends.db.DatabaseCache",
        "django.core.cache.backends.dummy.DummyCache",
    }
)
"""Backends whose one object may serve many threads and tasks at once."""

_shared: dict[str, BaseCache] = {}
_lock = threading.Lock()


def shared_cache(alias: str) -> BaseCache:
    """The cache ``alias`` as one object for the whole process where its backend allows, else ``caches[alias]``."""
    cache = _shared.get(alias)
    if cache is not None:
        return cache
    if (settings.CACHES.get(alias) or {}).get("BACKEND") not in SHAREABLE_BACKENDS:
        return caches[alias]  # also raises Django's own error for an alias that is not configured
    with _lock:
        return _shared.setdefault(alias, caches.create_connection(alias))


_ASYNC_MAX_CONNECTIONS = 20  # per event loop and server, unless the cache's OPTIONS say max_connections
_ASYNC_WAIT_SECONDS = 5  # for a free connection; then the caller fails as for a Redis that is down
_async_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, Any]] = weakref.WeakKeyDictionary()


def async_redis_of(cache: BaseCache) -> Any | None:
    """A ``redis.asyncio`` client of the server a ``RedisCache`` writes to, one per event loop and server (its
    connections belong to the loop) with the cache's options, so a count is a round trip on the loop, not a
    thread's; None for another cache."""
    primary = redis_cache_primary(cache)
    if primary is None:
        return None
    url, options = primary
    clients = _async_clients.setdefault(asyncio.get_running_loop(), {})
    client = clients.get(url)
    if client is None:
        # Here: the redis extra is optional.
        import redis.asyncio

        # A bounded pool whose callers wait for a free connection: a burst of requests must neither open a
        # connection each nor fail past redis-py's default limit (100) with "Too many connections".
        bounded = {"max_connections": _ASYNC_MAX_CONNECTIONS, "timeout": _ASYNC_WAIT_SECONDS, **options}
        client = clients[url] = redis.asyncio.Redis(
            connection_pool=redis.asyncio.BlockingConnectionPool.from_url(url, **bounded)
        )
    return client


def _forget(*, setting: str, **kwargs: Any) -> None:
    if setting == "CACHES":
        _shared.clear()
        _async_clients.clear()


setting_changed.connect(_forget, dispatch_uid="django_mcp.shared_caches.forget")
