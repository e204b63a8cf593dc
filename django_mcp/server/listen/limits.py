"""How many listen streams may be open, per principal and per process, and how often they may write."""

from __future__ import annotations

import asyncio
import logging
import weakref
from typing import TypeVar

from ...conf import get_settings
from ...protocol.errors import INTERNAL_ERROR, McpJsonRpcError
from .listener import Listener

L = TypeVar("L", bound=Listener)

logger = logging.getLogger("django_mcp")


open_streams: weakref.WeakSet[Listener] = weakref.WeakSet()


admitted_streams: dict[str, weakref.WeakSet[Listener]] = {}  # principal -> streams admitted, not yet ended


class WriteBudget:
    """``LISTEN_WRITES_PER_SECOND`` for the listen streams of a process together (a token bucket).

    A write of notifications to a stream takes a token; without one the stream waits its turn (first
    come, first served), and what it receives meanwhile goes out in the same write. So pushing to
    many streams costs at most that many writes a second, whatever the notification rate, and
    ordinary requests keep the rest of the event loop. At most 50 ms' worth go out back to back:
    a change pushed to 1,000 streams is spread over two seconds instead of taking the loop at once.
    """

    BURST_SECONDS = 0.05

    def __init__(self) -> None:
        self._tokens = 0.0
        self._rate: float | None = None
        self._stamp = 0.0

    async def atake(self) -> None:
        rate = get_settings().LISTEN_WRITES_PER_SECOND
        if rate is None:
            return
        loop = asyncio.get_running_loop()
        now = loop.time()
        burst = max(1.0, rate * self.BURST_SECONDS)
        if rate != self._rate:  # first use, or the setting changed: start full
            self._rate, self._tokens, self._stamp = rate, burst, now
        self._tokens = min(burst, self._tokens + (now - self._stamp) * rate)
        self._stamp = now
        self._tokens -= 1  # reserve this write's slot (negative: streams ahead of us are waiting)
        if self._tokens < 0:
            try:
                await asyncio.sleep(-self._tokens / rate)
            except asyncio.CancelledError:
                self._tokens += 1  # the stream went away: its slot goes to the next one
                raise


write_budget = WriteBudget()


def admit_stream(stream: L, principal: str) -> L:
    """Count ``stream`` against this process's limits for ``principal`` (a digest), or refuse it.

    Raises -32603 with HTTP 429 when ``principal`` already holds ``LISTEN_MAX_STREAMS_PER_PRINCIPAL``
    streams in this process, or the process ``LISTEN_MAX_STREAMS``. A stream counts from here until
    it ends (or is dropped unserved).
    """
    settings = get_settings()
    total = sum(len(streams) for streams in admitted_streams.values())
    if settings.LISTEN_MAX_STREAMS is not None and total >= settings.LISTEN_MAX_STREAMS:
        raise McpJsonRpcError(
            INTERNAL_ERROR,
            f"Too many listen streams: this server process holds at most {settings.LISTEN_MAX_STREAMS}; "
            "try again later",
            {"maxListenStreams": settings.LISTEN_MAX_STREAMS},
            http_status=429,
        )
    mine = admitted_streams.setdefault(principal, weakref.WeakSet())
    limit = settings.LISTEN_MAX_STREAMS_PER_PRINCIPAL
    if limit is not None and len(mine) >= limit:
        raise McpJsonRpcError(
            INTERNAL_ERROR,
            f"Too many listen streams: at most {limit} per client on this server process; "
            "close one before opening another",
            {"maxListenStreamsPerPrincipal": limit},
            http_status=429,
        )
    mine.add(stream)
    stream.principal = principal
    return stream


# -- the layer watch ---------------------------------------------------------------------------------


def close_listen_streams() -> int:
    """Gracefully end every open listen stream of this process (e.g. at shutdown). Returns how many."""
    streams = list(open_streams)
    for stream in streams:
        stream.close()
    return len(streams)


def open_listen_streams() -> int:
    """How many listen streams this process holds open."""
    return len(open_streams)
