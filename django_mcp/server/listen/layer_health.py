"""Whether the channel layer still delivers: probes, reconnections and failed publishes end the streams it failed."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
import weakref
from typing import Any

from ...compat import redis_subscriber_connections
from ...conf import get_settings
from ..notify import broadcast_failed
from ..outages import quiet_layer_logs, throttle
from .listener import Listener

logger = logging.getLogger("django_mcp")


PROBE_TYPE = "mcp.layer.probe"


class LayerUnavailable(Exception):
    """The channel layer failed its last check (or this one)."""


class LayerWatch:
    """Checks the channel layer for the listen streams of one event loop (see the module docstring)."""

    _watches: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, LayerWatch] = weakref.WeakKeyDictionary()

    def __init__(self, layer: Any) -> None:
        self.layer = layer
        self.streams: weakref.WeakSet[Listener] = weakref.WeakSet()
        self.healthy = True
        self.failures = 0
        self._loop_task: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()
        self._probing: asyncio.Future[bool] | None = None
        self._channel: str | None = None
        self._reader: asyncio.Task[None] | None = None
        self._pongs: dict[str, asyncio.Future[None]] = {}
        self._hooked: weakref.WeakSet[Any] = weakref.WeakSet()

    @classmethod
    def of(cls, layer: Any) -> LayerWatch:
        """The watch of the running loop for ``layer`` (a new one when the layer object changed)."""
        loop = asyncio.get_running_loop()
        watch = cls._watches.get(loop)
        if watch is None or watch.layer is not layer:
            if watch is not None:
                watch.stop()
            watch = cls._watches[loop] = cls(layer)
            quiet_layer_logs()
        return watch

    @classmethod
    def current(cls) -> LayerWatch | None:
        try:
            return cls._watches.get(asyncio.get_running_loop())
        except RuntimeError:
            return None

    # -- streams

    def register(self, stream: Listener) -> None:
        self.streams.add(stream)
        self._hook_reconnects()
        if self._loop_task is None or self._loop_task.done():
            self._loop_task = asyncio.ensure_future(self._arun())

    def unregister(self, stream: Listener) -> None:
        self.streams.discard(stream)

    async def aensure_healthy(self) -> None:
        """Return if the layer passed its last check; else check it now (raises :class:`LayerUnavailable`)."""
        if not self.healthy and not await self.aprobe():
            raise LayerUnavailable("the channel layer failed its check; try again shortly")

    def fail(self, reason: str, streams: list[Listener] | None = None, *, unhealthy: bool = True) -> None:
        """End ``streams`` (default: every registered one) with the error, logging at most a line a minute."""
        if unhealthy:
            self.healthy = False
        ended = list(self.streams) if streams is None else streams
        for stream in ended:
            self.streams.discard(stream)
            stream.fail(reason)
        self.failures += 1
        throttle.log(
            logger,
            logging.WARNING,
            "layer",
            "Listen streams may have missed notifications (%s): %d stream(s) of this process ended with an error",
            reason,
            len(ended),
        )

    def check_soon(self) -> None:
        """Probe now rather than at the next interval."""
        self._wake.set()

    # -- probing

    async def aprobe(self) -> bool:
        """Send a probe through the layer and wait for it; one probe at a time per watch."""
        if self._probing is None or self._probing.done():
            self._probing = asyncio.ensure_future(self._aprobe_once())
        return await asyncio.shield(self._probing)

    async def _aprobe_once(self) -> bool:
        timeout = get_settings().LISTEN_LAYER_TIMEOUT_SECONDS
        token = uuid.uuid4().hex
        pong: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._pongs[token] = pong
        try:
            async with asyncio.timeout(timeout):
                if self._channel is None or self._reader is None or self._reader.done():
                    self._channel = await self.layer.new_channel()
                    self._reader = asyncio.ensure_future(self._aread_probes(self._channel))
                await self.layer.send(self._channel, {"type": PROBE_TYPE, "token": token})
                await pong
        except Exception as exc:
            if isinstance(exc, TimeoutError):
                reason = f"the channel layer did not answer within {timeout} s"
            else:
                reason = f"the channel layer failed ({type(exc).__name__}: {exc})"
            self.fail(reason)
            return False
        finally:
            self._pongs.pop(token, None)
        if not self.healthy:
            self.healthy = True
            throttle.recovered(logger, "layer", "The channel layer answers its checks again")
        return True

    async def _aread_probes(self, channel: str) -> None:
        while True:
            message = await self.layer.receive(channel)
            if message.get("type") == PROBE_TYPE:
                pong = self._pongs.get(str(message.get("token")))
                if pong is not None and not pong.done():
                    pong.set_result(None)

    async def _arun(self) -> None:
        """Probe every ``LISTEN_LAYER_CHECK_SECONDS`` (or when woken) while streams are open.

        The probe channel and its reader stay for the life of the watch (one per event loop): tearing
        them down during an outage would only fail, and the next stream would need them again.
        """
        while self.streams:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(get_settings().LISTEN_LAYER_CHECK_SECONDS):
                    await self._wake.wait()
            self._wake.clear()
            if self.streams:
                await self.aprobe()

    def stop(self) -> None:
        for task in (self._loop_task, self._reader):
            if task is not None:
                task.cancel()
        self._reader = self._channel = None

    # -- channels_redis: a reconnected subscriber lost what was published while it was down

    def _hook_reconnects(self) -> None:
        for connection in redis_subscriber_connections(self.layer):
            if connection not in self._hooked:
                connection.register_connect_callback(self._reconnected)
                self._hooked.add(connection)

    def _reconnected(self, connection: Any) -> None:
        if self.streams:
            self.fail("the channel layer reconnected; notifications may have been lost", unhealthy=False)

    def broadcast_failed(self, group: str, exc: BaseException) -> None:
        streams = [s for s in self.streams if group in s.joined]
        if streams:
            self.fail(f"a notification could not be published ({type(exc).__name__})", streams, unhealthy=False)
        self.check_soon()
        if self._loop_task is None or self._loop_task.done():
            self._loop_task = asyncio.ensure_future(self._arun())


def _publish_failed(sender: Any, *, group: str, exc: BaseException, **kwargs: Any) -> None:
    watch = LayerWatch.current()
    if watch is not None:
        watch.broadcast_failed(group, exc)


broadcast_failed.connect(_publish_failed, dispatch_uid="django_mcp.listen.layer_watch")
