"""Rate limits per caller: a fixed window counted atomically (``add``, ``incr``; on Redis an ``INCRBY`` on the
event loop, the counts of concurrent requests in one round trip) in the Django cache ``RATELIMIT_USE_CACHE``
names (django-ratelimit's setting, and its rates and ``RATELIMIT_ENABLE`` / ``RATELIMIT_FAIL_OPEN``), so a
limit holds across workers.

``DJANGO_MCP["RATE_LIMIT"]`` bounds every request of one caller (its :attr:`McpRequest.limit_key`:
the principal, or for an anonymous caller its address); ``@tool(rate_limit=...)`` bounds one tool's
calls per caller on top. Past a limit the request answers -32603 with HTTP 429 and ``Retry-After``.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import logging
import time
import weakref
import zlib
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.core.cache import BaseCache
from django.core.cache.backends.dummy import DummyCache
from django.core.cache.backends.locmem import LocMemCache

from ..conf import get_settings, split_rate
from ..protocol.errors import INTERNAL_ERROR, McpJsonRpcError
from ..shared_caches import async_redis_of, shared_cache
from .outages import unavailable
from .request import McpRequest

logger = logging.getLogger("django_mcp")
_CANNOT_COUNT = "Rate limits cannot be counted now: try again shortly"


_EXPIRATION_FUDGE = 5  # seconds a window's counter outlives the window (as django-ratelimit keeps it)
_split = functools.cache(split_rate)  # the few rates a project names, read once


def _window_end(caller: str, period: int, now: int) -> int:
    """When the caller's current fixed window ends; windows are staggered by caller, as django-ratelimit's are."""
    end = now - now % period + zlib.crc32(caller.encode()) % period
    return end + period if end < now else end


def _count(cache: BaseCache, key: str, period: int) -> int | None:
    """This request's number in the window of ``key`` (``add`` opens it, ``incr`` counts on: both atomic in a
    shared cache); None if the cache would not count."""
    if cache.add(key, 1, period + _EXPIRATION_FUDGE):
        return 1
    try:
        return int(cache.incr(key))
    except ValueError:  # the counter expired between the two calls: a new window
        return 1 if cache.add(key, 1, period + _EXPIRATION_FUDGE) else None


async def _acount_in_redis(client: Any, key: str, period: int) -> int:
    """``_count`` on Redis: the window counted on (its expiry set when this count opened it), in one round
    trip with the counts this loop asks of ``client`` meanwhile."""
    batch = _batches.get(client)
    if batch is None:
        batch = _batches[client] = _RedisCounts()
    return await batch.count(client, key, period)


class _RedisCounts:
    """The counts one event loop asks of one Redis go out together: one round trip at a time, and the
    counts asked while it is on its way in the next. A round trip costs the loop far more than a command
    in it, so under load one serves many requests; each count is still its own atomic ``INCRBY``, exact
    across workers. A count asked while nothing is on its way goes at once, from its own request (no task
    to start).

    The counts go over a connection of their own, taken from the client's pool once: one round trip at a
    time needs no more, and redis-py's command and pipeline machinery (a pool checkout, a retry wrapper,
    its hooks) cost the loop more than the round trip itself."""

    def __init__(self) -> None:
        self._waiting: list[tuple[str, int, asyncio.Future[int]]] = []
        self._busy = False
        self._connection: Any = None

    async def count(self, client: Any, key: str, period: int) -> int:
        if self._busy:
            future: asyncio.Future[int] = asyncio.get_running_loop().create_future()
            self._waiting.append((key, period, future))
            return await future
        self._busy = True
        try:
            return (await self._aincr(client, [(key, period)]))[0]
        finally:
            self._busy = False
            self._send_waiting(client)

    def _send_waiting(self, client: Any) -> None:
        if self._waiting and not self._busy:
            batch, self._waiting = self._waiting, []
            self._busy = True
            sending = asyncio.get_running_loop().create_task(self._asend(client, batch))
            sending.add_done_callback(lambda _: self._sent(client))

    def _sent(self, client: Any) -> None:
        self._busy = False
        self._send_waiting(client)

    async def _asend(self, client: Any, batch: list[tuple[str, int, asyncio.Future[int]]]) -> None:
        try:
            counts = await self._aincr(client, [(key, period) for key, period, _ in batch])
            for (_, _, future), count in zip(batch, counts, strict=True):
                if not future.done():  # its request may have gone (the client disconnected)
                    future.set_result(count)
        except Exception as exc:  # Redis is down: every request of the batch answers 503
            for _, _, future in batch:
                if not future.done():
                    future.set_exception(exc)
        finally:  # cancelled (the loop is closing): no request waits forever
            for _, _, future in batch:
                future.cancel()

    async def _aincr(self, client: Any, counts: list[tuple[str, int]]) -> list[int]:
        """Each window counted on, on this loop's counting connection; one that Redis dropped since the last
        count is tried once more, as redis-py's client would."""
        if self._connection is None:
            self._connection = await client.connection_pool.get_connection()
        try:
            return await _aincr_on(self._connection, counts)
        except _redis_connection_error():
            return await _aincr_on(self._connection, counts)  # on a new connection


async def _aincr_on(connection: Any, counts: list[tuple[str, int]]) -> list[int]:
    """``INCRBY`` each window, then the windows these counts opened given their expiry: a process ending
    between the two leaves one window's counter without expiry, never a wrong count (each window has a key
    of its own)."""
    try:
        counted = [int(n) for n in await _around(connection, [("INCRBY", key, 1) for key, _ in counts])]
        opened = [
            ("EXPIRE", key, period + _EXPIRATION_FUDGE)
            for (key, period), n in zip(counts, counted, strict=True)
            if n == 1
        ]
        if opened:
            await _around(connection, opened)
    except BaseException:
        await connection.disconnect(nowait=True)  # a reply left unread must not answer the next count
        raise
    return counted


async def _around(connection: Any, commands: list[tuple[Any, ...]]) -> list[Any]:
    """``commands`` in one round trip: sent together, their replies read in order (the connection connects
    first if it is not)."""
    await connection.send_packed_command(connection.pack_commands(commands), check_health=False)
    return [await connection.read_response() for _ in commands]


@functools.cache
def _redis_connection_error() -> type[Exception]:
    # Here: the redis extra is optional.
    from redis import exceptions

    return exceptions.ConnectionError


# Per client, and so per event loop (shared_caches gives each loop its own client).
_batches: weakref.WeakKeyDictionary[Any, _RedisCounts] = weakref.WeakKeyDictionary()


async def _aenforce(request: McpRequest, rate: str, group: str, what: str) -> None:
    if not getattr(settings, "RATELIMIT_ENABLE", True):
        return
    caller = hashlib.sha256(request.limit_key.encode()).hexdigest()[:32]  # never the principal itself
    limit, period = _split(rate)
    now = int(time.time())
    window_end = _window_end(caller, period, now)
    key = (
        "django_mcp:rate:"
        + hashlib.md5(f"{group}|{rate}|{window_end}|{caller}".encode(), usedforsecurity=False).hexdigest()
    )
    # The process's one object of the cache (shared_caches says why); an in-memory cache answers on the loop,
    # Redis on the loop's own client (the same key and value as the cache's add and incr), any other in a thread.
    cache = shared_cache(getattr(settings, "RATELIMIT_USE_CACHE", "default"))
    try:
        if isinstance(cache, LocMemCache | DummyCache):
            count = _count(cache, key, period)
        elif (client := async_redis_of(cache)) is not None:
            count = await _acount_in_redis(client, cache.make_and_validate_key(key), period)
        else:
            count = await sync_to_async(_count)(cache, key, period)
    except Exception as exc:  # the cache is down (a cache backend may raise anything)
        raise unavailable(logger, "rate-cache", "The rate limit cache", exc, _CANNOT_COUNT) from None
    if count is None:  # the cache could not count: closed, unless the project said open (as django-ratelimit)
        if getattr(settings, "RATELIMIT_FAIL_OPEN", False):
            return
        raise McpJsonRpcError(INTERNAL_ERROR, _CANNOT_COUNT, http_status=503)
    if count <= limit:
        return
    retry = max(1, window_end - now)
    raise McpJsonRpcError(
        INTERNAL_ERROR,
        f"Rate limit exceeded: at most {rate} {what} per caller; retry in {retry} s",
        {"retryAfterSeconds": retry},
        http_status=429,
        headers={"Retry-After": str(retry)},
    )


async def aenforce_request_rate(request: McpRequest) -> None:
    """``RATE_LIMIT`` for every request of a caller (nothing at all while no limit is set)."""
    rate = get_settings().RATE_LIMIT
    if rate is not None:
        await _aenforce(request, rate, "django_mcp:requests", "requests")


async def aenforce_tool_rate(request: McpRequest, tool: str, rate: str) -> None:
    """A tool's own ``rate_limit`` per caller."""
    await _aenforce(request, rate, f"django_mcp:tool:{tool}", f"calls of {tool!r}")
