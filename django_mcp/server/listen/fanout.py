"""How a stream hears its groups: one channel of its own, or a process-wide fan-out of each group."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
import weakref
from typing import Any

from ...conf import get_settings
from ..notify import before_broadcast
from ..outages import throttle
from .layer_health import LayerUnavailable, LayerWatch
from .listener import Listener

logger = logging.getLogger("django_mcp")


class Subscription:
    """A stream's group memberships in the channel layer: joined, started, left."""

    async def ajoin(self, group: str) -> None:
        raise NotImplementedError

    async def aleave(self, group: str) -> None:
        raise NotImplementedError

    def start(self) -> None:
        """Start handing messages to the stream (after its acknowledgement and snapshots)."""

    async def aclose(self, joined: list[str]) -> None:
        for group in joined:
            with contextlib.suppress(Exception):
                await self.aleave(group)


def subscription_for(layer: Any, stream: Listener) -> Subscription:
    if get_settings().LISTEN_FANOUT == "process":
        return _Shared(Fanout.of(layer), stream)
    return _OwnChannel(layer, stream)


class _OwnChannel(Subscription):
    """``LISTEN_FANOUT = "stream"``: a layer channel of the stream's own, read by a task of its own."""

    def __init__(self, layer: Any, stream: Listener) -> None:
        self.layer, self.stream = layer, stream
        self.channel: str | None = None
        self.reader: asyncio.Task[None] | None = None

    async def ajoin(self, group: str) -> None:
        if self.channel is None:
            self.channel = await self.layer.new_channel()
        await self.layer.group_add(group, self.channel)

    async def aleave(self, group: str) -> None:
        if self.channel is not None:
            await self.layer.group_discard(group, self.channel)

    def start(self) -> None:
        if self.channel is not None:
            self.reader = asyncio.ensure_future(self._aread(self.channel))
            self.reader.add_done_callback(self._reader_done)

    async def _aread(self, channel: str) -> None:
        while self.stream.on_layer_message(await self.layer.receive(channel)):
            pass

    def _reader_done(self, reader: asyncio.Future[None]) -> None:
        if not reader.cancelled() and reader.exception() is not None:
            throttle.log(
                logger,
                logging.WARNING,
                "reader",
                "Listen stream %r lost the channel layer; closing it: %r",
                self.stream.subscription_id,
                reader.exception(),
            )
            self.stream.fail()

    async def aclose(self, joined: list[str]) -> None:
        if self.reader is not None:
            self.reader.cancel()
        await super().aclose(joined)


class _Shared(Subscription):
    """``LISTEN_FANOUT = "process"``: the loop's :class:`Fanout` channel for each group."""

    def __init__(self, fanout: Fanout, stream: Listener) -> None:
        self.fanout, self.stream = fanout, stream

    async def ajoin(self, group: str) -> None:
        await self.fanout.ajoin(group, self.stream)

    async def aleave(self, group: str) -> None:
        await self.fanout.aleave(group, self.stream)


class _Group:
    def __init__(self) -> None:
        self.channel: str | None = None
        self.streams: set[Listener] = set()
        self.ready: asyncio.Future[None] | None = None
        self.reader: asyncio.Task[None] | None = None


class Fanout:
    """One layer channel per group per event loop, shared by the loop's listen streams of that group.

    A notification for a group is received (and deserialised) once per process, then queued for
    each local stream of the group, ``STREAMS_PER_TURN`` at a time: a function call each, no task
    switch, next to nothing for a stream that already has the same list change or resource update,
    or a state of the same task, waiting. (With a channel per
    stream, every stream's reader task wakes up for every message: at 1,000 streams and 20
    notifications a second that alone kept a core busy.) It also subscribes Redis once per group
    instead of once per stream.

    A group's final message published on this loop reaches its streams here at once
    (:meth:`before_publish`); the layer's copy of it, coming back later, is dropped by each of them.
    Not while a message the loop published to one of its groups is still on its way through the
    layer: the final message would overtake it (a task's last status message, or a resource update
    the task's body sent before it ended).
    """

    STREAMS_PER_TURN = 100
    """A message goes to this many of a group's streams per turn of the event loop: a thousand at once
    would hold the loop (and every request waiting for it) for milliseconds."""

    _hubs: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Fanout] = weakref.WeakKeyDictionary()

    def __init__(self, layer: Any) -> None:
        self.layer = layer
        self.groups: dict[str, _Group] = {}
        self.origin = uuid.uuid4().hex
        self._published = 0
        self._on_the_way: dict[str, float] = {}  # this loop's messages to its groups not back yet: tag -> give up at

    @classmethod
    def of(cls, layer: Any) -> Fanout:
        loop = asyncio.get_running_loop()
        hub = cls._hubs.get(loop)
        if hub is None or hub.layer is not layer:
            if hub is not None:  # the layer was replaced (CHANNEL_LAYERS changed): let the old one go
                for entry in hub.groups.values():
                    if entry.reader is not None:
                        entry.reader.cancel()
            hub = cls._hubs[loop] = cls(layer)
        return hub

    @classmethod
    def before_publish(cls, layer: Any, group: str, envelope: dict[str, Any]) -> bool:
        """Hand a group's final message to this loop's streams of it at once (True), or tag a message it waits for."""
        hub = cls._hubs.get(asyncio.get_running_loop())  # abroadcast's loop
        entry = hub.groups.get(group) if hub is not None and hub.layer is layer else None
        if hub is None or entry is None:
            return False  # no stream of this loop is in the group: the layer's order is all there is
        hub._give_up_lost()
        if envelope.get("final") and not hub._on_the_way:
            for stream in list(entry.streams):
                stream.on_layer_message(envelope)
            return bool(entry.streams)
        hub._published += 1
        tag = envelope["echo"] = f"{hub.origin}.{hub._published}"
        # Given up on after the layer's timeout: a lost message only delays local delivery that long.
        hub._on_the_way[tag] = time.monotonic() + get_settings().LISTEN_LAYER_TIMEOUT_SECONDS
        return False

    def _give_up_lost(self) -> None:
        # Oldest first (insertion order): what never comes back (its stream left meanwhile, its
        # publish failed) is dropped here, so the dict holds at most a timeout's worth of publishes.
        now = time.monotonic()
        while self._on_the_way:
            tag, give_up_at = next(iter(self._on_the_way.items()))
            if give_up_at > now:
                return
            del self._on_the_way[tag]

    def members(self) -> int:
        """How many (stream, group) memberships this loop's streams hold."""
        return sum(len(entry.streams) for entry in self.groups.values())

    async def ajoin(self, group: str, stream: Listener) -> None:
        entry = self.groups.get(group)
        if entry is None:
            entry = self.groups[group] = _Group()
            # In a task of its own: a client that goes away meanwhile must not leave the others waiting.
            entry.ready = asyncio.ensure_future(self._asubscribe(group, entry))
            entry.ready.add_done_callback(lambda f: f.cancelled() or f.exception())
        assert entry.ready is not None
        await asyncio.shield(entry.ready)
        if self.groups.get(group) is not entry:  # it failed meanwhile and was dropped
            raise LayerUnavailable("the channel layer failed; try again shortly")
        entry.streams.add(stream)

    async def _asubscribe(self, group: str, entry: _Group) -> None:
        try:
            async with asyncio.timeout(get_settings().LISTEN_LAYER_TIMEOUT_SECONDS):
                entry.channel = await self.layer.new_channel()
                await self.layer.group_add(group, entry.channel)
        except BaseException:
            if self.groups.get(group) is entry:
                del self.groups[group]
            raise
        entry.reader = asyncio.ensure_future(self._aread(group, entry))

    async def aleave(self, group: str, stream: Listener) -> None:
        entry = self.groups.get(group)
        if entry is None or stream not in entry.streams:  # (its entry failed and was replaced meanwhile)
            return
        entry.streams.discard(stream)
        if entry.streams:
            return
        del self.groups[group]
        if entry.reader is not None:
            entry.reader.cancel()
        if entry.channel is not None:
            with contextlib.suppress(Exception):
                async with asyncio.timeout(get_settings().LISTEN_LAYER_TIMEOUT_SECONDS):
                    await self.layer.group_discard(group, entry.channel)

    async def _aread(self, group: str, entry: _Group) -> None:
        assert entry.channel is not None
        try:
            while True:
                message = await self.layer.receive(entry.channel)
                if "echo" in message:
                    self._on_the_way.pop(message["echo"], None)
                for index, stream in enumerate(list(entry.streams)):
                    if index and not index % self.STREAMS_PER_TURN:
                        await asyncio.sleep(0)  # requests waiting for the loop go on between slices
                    stream.on_layer_message(message)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # the layer failed: every stream of the group may miss messages
            if self.groups.get(group) is entry:
                del self.groups[group]
            watch = LayerWatch.current()
            reason = f"the channel layer failed ({type(exc).__name__}: {exc})"
            if watch is not None:
                watch.fail(reason, list(entry.streams))
            else:
                for stream in list(entry.streams):
                    stream.fail(reason)


# -- limits ------------------------------------------------------------------------------------------


def _offer_to_this_loop(sender: Any, *, layer: Any, group: str, envelope: dict[str, Any], **kwargs: Any) -> bool:
    return Fanout.before_publish(layer, group, envelope)


before_broadcast.connect(_offer_to_this_loop, dispatch_uid="django_mcp.listen.fanout")
