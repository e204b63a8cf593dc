"""Every use of another library's private API, in one place (``tests/glue/test_compat.py`` checks their shape).

Each function says what it reaches for and why no public API does the job.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any

from asgiref.sync import SyncToAsync
from django.core.cache.backends.redis import RedisCache
from django.http import HttpRequest, HttpResponseBase


def mark_logged(response: HttpResponseBase) -> None:
    """Tell Django's request logger this response was logged already (the flag ``log_response()`` sets and reads).

    An outage's 503, or a health probe, is logged once where it happened (throttled): not a line per request.
    """
    response._has_been_logged = True  # type: ignore[attr-defined]


def has_body_stream(request: HttpRequest) -> bool:
    """Whether ``request.read(n)`` reads its body as a stream (a real request) rather than a test client's mock."""
    return hasattr(request, "_stream")


def sqlite_init_commands(database: Any) -> tuple[str, ...]:
    """The ``init_command`` statements Django's SQLite backend runs on a new connection.

    ``get_connection_params()`` reads them from ``OPTIONS`` into this attribute; the event loop's own
    read connection runs them too, as Django would.
    """
    return tuple(getattr(database, "init_commands", ()))


def request_thread_executors() -> tuple[Any, MutableMapping[Any, Any]] | None:
    """asgiref's current ``ThreadSensitiveContext`` and its map of contexts to one-thread executors, or None.

    The executor Django's ASGI handler keeps for a request is only reachable there: a listen stream
    hands its thread back (``server.listen``), and a task that ran sync code closes its connections there.
    """
    executors = getattr(SyncToAsync, "context_to_thread_executor", None)
    context = SyncToAsync.thread_sensitive_context.get(None)
    if executors is None:
        return None
    return context, executors


def redis_subscriber_connections(layer: Any) -> list[Any]:
    """The Redis connections a ``channels_redis`` pub/sub layer receives on (none for other layers).

    Their connect callbacks are how a reconnection (and the notifications lost meanwhile) is noticed.
    """
    get_layer = getattr(type(layer), "_get_layer", None)
    if get_layer is None:
        return []
    try:
        shards = get_layer(layer)._shards
    except Exception:  # another layer with the same method name, or a changed channels_redis
        return []
    found = []
    for shard in shards:
        connection = getattr(getattr(shard, "_pubsub", None), "connection", None)
        if connection is not None and hasattr(connection, "register_connect_callback"):
            found.append(connection)
    return found


def pool_idle_connections(pool: Any) -> list[Any]:
    """The connections idle in a ``psycopg_pool.AsyncConnectionPool``, taken out of it.

    ``close()`` needs the pool's event loop; when that loop has closed (or the process is ending) these
    are closed without it, so that the server sees them go and a test database can be dropped.
    """
    idle = getattr(pool, "_pool", None)
    if idle is None:
        return []
    taken = list(idle)
    idle.clear()
    return taken


def ninja_operations(api: Any) -> list[tuple[Any, Any]]:
    """``(router, operation)`` for every operation django-ninja serves for ``api``, as its URLs serve them.

    Ninja 1.6+ binds a copy of each router's operations to the API (inherited auth, throttles, decorators)
    when it first builds its URLs or schema; only those copies run as the API runs, and they are reachable
    only through ``_get_bound_routers()`` (the router returned is the one the project wrote, its
    ``template``). Before 1.6 the routers' own operations were bound, listed in ``_routers``.
    """
    if hasattr(api, "_get_bound_routers"):
        pairs = [(bound.template, bound.path_operations) for bound in api._get_bound_routers()]
    else:
        pairs = [(router, router.path_operations) for _, router in api._routers]
    return [
        (router, operation)
        for router, path_operations in pairs
        for path_view in path_operations.values()
        for operation in path_view.operations
    ]


def skip_csrf_check(request: HttpRequest) -> None:
    """Make ``CsrfViewMiddleware`` accept ``request`` (the flag its ``process_view`` reads, as the test client sets).

    A published operation's inner request carries no cookie a browser could have sent on its own, so there is
    no forgery to guard against; django-ninja's and DRF's session auth run the middleware's check themselves.
    """
    request._dont_enforce_csrf_checks = True  # type: ignore[attr-defined]


def redis_cache_primary(cache: Any) -> tuple[str, dict[str, Any]] | None:
    """The URL of the server a Django ``RedisCache`` writes to and the options its connection pool gets, or
    None (another cache, or a ``RedisCache`` whose shape changed).

    Django keeps both on the cache object only (``_servers``, ``_options``); an asyncio client of the same
    server (``server.rates``) needs them.
    """
    servers, options = getattr(cache, "_servers", None), getattr(cache, "_options", None)
    if not isinstance(cache, RedisCache) or not servers or not isinstance(servers[0], str):
        return None
    if not isinstance(options, dict):
        return None
    # What Django's RedisCacheClient takes for itself; the rest goes to redis-py's ConnectionPool.from_url.
    pool_options = {k: v for k, v in options.items() if k not in ("pool_class", "parser_class", "serializer")}
    return servers[0], pool_options
