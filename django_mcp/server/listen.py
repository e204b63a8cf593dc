"""``subscriptions/listen``: a long-lived SSE stream of change notifications fed by the Channels layer."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from channels.layers import get_channel_layer

from ..protocol import sse
from ..protocol.errors import INTERNAL_ERROR, McpJsonRpcError
from ..protocol.jsonrpc import META_SUBSCRIPTION_ID, error_response, notification, result_response
from .notify import MESSAGE_TYPE

CONTROL_TYPE = "mcp.session.control"

logger = logging.getLogger("django_mcp")

_CLOSE = object()
_open_streams: weakref.WeakSet[ListenStream] = weakref.WeakSet()

Snapshot = Callable[[], Awaitable[list[dict[str, Any]]]]


class ListenStream:
    """One listen subscription: joins its groups, acknowledges, then forwards notifications.

    The per-stream queue is bounded: a client too slow to keep up gets the
    graceful listen result and the stream ends, rather than the server
    buffering without bound.
    """

    def __init__(
        self,
        subscription_id: str | int | None,
        honoured: dict[str, Any],
        groups: list[str],
        snapshots: list[Snapshot],
        *,
        result_meta: dict[str, Any],
        keepalive_seconds: float,
        queue_size: int,
        handshake: bool = False,
    ) -> None:
        self.subscription_id = subscription_id
        self.handshake = handshake
        """A handshake-era GET stream: no acknowledgement, no subscription tags, groups joined and left as told."""
        self.honoured = honoured
        self.groups = groups
        self._snapshots = snapshots
        self._result_meta = result_meta
        self._keepalive = keepalive_seconds
        self._queue: asyncio.Queue[Any] = asyncio.Queue(maxsize=queue_size)
        self.joined: list[str] = []
        self._failed = False  # the layer failed: end with an error, not the graceful result

    def _tag(self, message: dict[str, Any]) -> dict[str, Any]:
        if self.handshake:
            return message
        params = dict(message.get("params") or {})
        params["_meta"] = {**(params.get("_meta") or {}), META_SUBSCRIPTION_ID: self.subscription_id}
        return {**message, "params": params}

    def close(self) -> None:
        """End the stream gracefully: the client gets the listen result, then the stream closes."""
        while True:
            try:
                self._queue.put_nowait(_CLOSE)
                return
            except asyncio.QueueFull:
                self._queue.get_nowait()

    def _unavailable(self) -> bytes:
        error = McpJsonRpcError(INTERNAL_ERROR, "Notifications are unavailable: the channel layer failed")
        return sse.event(error_response(self.subscription_id, error))

    def _final(self) -> bytes:
        result = {"resultType": "complete", "_meta": {**self._result_meta, META_SUBSCRIPTION_ID: self.subscription_id}}
        return sse.event(result_response(self.subscription_id, result))

    async def _forward(self, layer: Any, channel: str) -> None:
        while True:
            message = await layer.receive(channel)
            if self.handshake and message.get("type") == CONTROL_TYPE:
                await self._control(layer, channel, message)
                continue
            if message.get("type") != MESSAGE_TYPE:
                continue
            try:
                self._queue.put_nowait(message["message"])
            except asyncio.QueueFull:
                logger.warning("Listen stream %r fell behind; closing it", self.subscription_id)
                self.close()
                return

    async def _control(self, layer: Any, channel: str, message: dict[str, Any]) -> None:
        """A session's resources/subscribe or unsubscribe, told to its GET stream wherever it runs."""
        group = message.get("group")
        if not isinstance(group, str):
            return
        if message.get("op") == "join" and group not in self.joined:
            await layer.group_add(group, channel)
            self.joined.append(group)
        elif message.get("op") == "leave" and group in self.joined:
            await layer.group_discard(group, channel)
            self.joined.remove(group)

    def _reader_done(self, reader: asyncio.Future[None]) -> None:
        if not reader.cancelled() and reader.exception() is not None:
            logger.warning(
                "Listen stream %r lost the channel layer; closing it", self.subscription_id, exc_info=reader.exception()
            )
            self._failed = True
            self.close()

    async def events(self) -> AsyncIterator[bytes]:
        """The SSE body. Group memberships are released however the stream ends."""
        layer = get_channel_layer() if self.groups else None
        channel: str | None = None
        reader: asyncio.Task[None] | None = None
        _open_streams.add(self)
        try:
            if layer is not None:
                try:
                    channel = await layer.new_channel()
                    for group in self.groups:
                        await layer.group_add(group, channel)
                        self.joined.append(group)
                except Exception:
                    logger.warning("Listen stream %r could not subscribe", self.subscription_id, exc_info=True)
                    yield self._unavailable()
                    return
            if not self.handshake:
                yield sse.event(
                    self._tag(
                        notification("notifications/subscriptions/acknowledged", {"notifications": self.honoured})
                    )
                )
            for snapshot in self._snapshots:
                for message in await snapshot():
                    yield sse.event(self._tag(message))
            if layer is not None and channel is not None:
                reader = asyncio.ensure_future(self._forward(layer, channel))
                reader.add_done_callback(self._reader_done)
            while True:
                try:
                    item = await asyncio.wait_for(self._queue.get(), self._keepalive)
                except TimeoutError:
                    yield sse.KEEPALIVE  # a half-open connection is only noticed on write
                    continue
                if item is _CLOSE:
                    if not self.handshake:
                        yield self._unavailable() if self._failed else self._final()
                    return
                yield sse.event(self._tag(item))
        finally:
            _open_streams.discard(self)
            if reader is not None:
                reader.cancel()
            if layer is not None and channel is not None:
                for group in self.joined:
                    with contextlib.suppress(Exception):
                        await layer.group_discard(group, channel)
            self.joined.clear()


def close_listen_streams() -> int:
    """Gracefully end every open listen stream of this process (e.g. at shutdown). Returns how many."""
    streams = list(_open_streams)
    for stream in streams:
        stream.close()
    return len(streams)


def open_listen_streams() -> int:
    """How many listen streams this process holds open."""
    return len(_open_streams)
