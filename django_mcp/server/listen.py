"""``subscriptions/listen``: a long-lived SSE stream of change notifications fed by the Channels layer.

The same :class:`ListenStream` serves the handshake era's ``GET`` stream (``handshake=True``).

Pushes are honest. A stream that cannot be sure it heard everything ends with a JSON-RPC error
(-32603 "Notifications are unavailable: ...") instead of staying open and silent; the client
listens again and gets a fresh acknowledgement (and snapshot). The channel layers do not say when
they lose messages (the Redis pub/sub layer reconnects inside its receive loop and drops what was
published meanwhile), so each event loop's :class:`LayerWatch` finds out:

- every ``LISTEN_LAYER_CHECK_SECONDS`` while streams are open it sends a probe to a channel of its
  own and waits ``LISTEN_LAYER_TIMEOUT_SECONDS`` for it to come back; a probe that fails or does not
  come back ends every open stream of the loop, and until a probe succeeds again new streams are
  refused with the same error (each attempt probes at once, so service resumes as soon as the
  layer does);
- with ``channels_redis``, a reconnection of a subscriber connection ends the streams open at that
  moment (messages published while it was down are lost);
- a publish of this process that fails (``notify.abroadcast``) ends this process's streams of that
  group and has the layer probed at once.

Streams are cheap: none holds an OS thread (:func:`_release_request_thread`); a process receives a
group's notification once and hands it to its streams of the group (:class:`Fanout`, except on the
in-memory layer: ``LISTEN_FANOUT``); a burst of notifications queued for a stream goes out as one
write, repeats of the same idempotent notification (a list change, an update of one resource) sent
once; and the streams of a process make at most ``LISTEN_WRITES_PER_SECOND`` writes together
(:class:`WriteBudget`), so a busy notification source cannot starve ordinary requests. Streams are
bounded: ``LISTEN_MAX_STREAMS_PER_PRINCIPAL`` and ``LISTEN_MAX_STREAMS`` per process
(:func:`admit_stream`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from asgiref.sync import sync_to_async
from channels.layers import InMemoryChannelLayer, get_channel_layer
from django.db import connections

from ..compat import redis_subscriber_connections, request_thread_executors
from ..conf import get_settings
from ..protocol import sse
from ..protocol.errors import INTERNAL_ERROR, McpJsonRpcError
from ..protocol.jsonrpc import META_SUBSCRIPTION_ID, error_response, notification, result_response
from .notify import MESSAGE_TYPE, on_publish, on_publish_failure, quiet_layer_logs, throttle

CONTROL_TYPE = "mcp.session.control"
PROBE_TYPE = "mcp.layer.probe"

logger = logging.getLogger("django_mcp")

_CLOSE = object()
_open_streams: weakref.WeakSet[ListenStream] = weakref.WeakSet()
_admitted: dict[str, weakref.WeakSet[ListenStream]] = {}  # principal -> streams admitted, not yet ended

# Notifications that say only "this changed": two of them queued for one stream say no more than one.
_IDEMPOTENT = frozenset(
    {
        "notifications/tools/list_changed",
        "notifications/prompts/list_changed",
        "notifications/resources/list_changed",
        "notifications/resources/updated",
    }
)

Snapshot = Callable[[], Awaitable[list[dict[str, Any]]]]


def _idempotent_key(message: Any) -> tuple[str, Any] | None:
    method = message.get("method") if isinstance(message, dict) else None
    if method not in _IDEMPOTENT:
        return None
    params = message.get("params")
    return method, params.get("uri") if isinstance(params, dict) else None


class LayerUnavailable(Exception):
    """The channel layer failed its last check (or this one)."""


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
        self.principal: str | None = None
        self._failed: str | None = None  # why the layer failed it: end with an error, not the graceful result
        self._pending: set[tuple[str, Any]] = set()  # idempotent notifications queued, not yet written
        self._subscription: _Subscription | None = None
        self._closing = False
        self._controls: set[asyncio.Task[None]] = set()
        self._control_lock = asyncio.Lock()
        self._ended: set[str] = set()  # groups whose final message this stream has had

    def _tag(self, message: dict[str, Any]) -> dict[str, Any]:
        if self.handshake:
            return message
        params = dict(message.get("params") or {})
        params["_meta"] = {**(params.get("_meta") or {}), META_SUBSCRIPTION_ID: self.subscription_id}
        return {**message, "params": params}

    def close(self) -> None:
        """End the stream gracefully: the client gets the listen result, then the stream closes."""
        self._closing = True
        while True:
            try:
                self._queue.put_nowait(_CLOSE)
                return
            except asyncio.QueueFull:
                self._queue.get_nowait()

    def fail(self, reason: str = "the channel layer failed") -> None:
        """End the stream with the -32603 error: it may have missed notifications."""
        if self._failed is None:
            self._failed = reason
            self.close()

    def _unavailable(self, reason: str = "the channel layer failed") -> bytes:
        error = McpJsonRpcError(INTERNAL_ERROR, f"Notifications are unavailable: {reason}")
        return sse.event(error_response(self.subscription_id, error))

    def _final(self) -> bytes:
        result = {"resultType": "complete", "_meta": {**self._result_meta, META_SUBSCRIPTION_ID: self.subscription_id}}
        return sse.event(result_response(self.subscription_id, result))

    def deliver(self, message: dict[str, Any]) -> bool:
        """Queue a notification for the client; False (and the stream closes) if the client fell behind.

        A list change or resource update already queued and not yet written is not queued again: a
        flood of them costs one write per stream, and never fills the queue.
        """
        if self._closing:
            return False
        key = _idempotent_key(message)
        if key is not None:
            if key in self._pending:
                return True
            self._pending.add(key)
        try:
            self._queue.put_nowait(message)
            return True
        except asyncio.QueueFull:
            throttle.log(
                logger, logging.WARNING, "behind", "Listen stream %r fell behind; closing it", self.subscription_id
            )
            self.close()
            return False

    def on_layer_message(self, message: dict[str, Any]) -> bool:
        """A message from the channel layer for one of this stream's groups; False once the stream closed."""
        kind = message.get("type")
        if kind == MESSAGE_TYPE:
            group = message.get("group")
            if group in self._ended:
                return True  # after the group's final message: stale, or that message's second copy
            if message.get("final") and isinstance(group, str):
                self._ended.add(group)
            return self.deliver(message["message"])
        if kind == CONTROL_TYPE and self.handshake and self._subscription is not None:
            task = asyncio.ensure_future(self._control(self._subscription, message))
            self._controls.add(task)
            task.add_done_callback(self._controls.discard)
        return True

    async def _control(self, subscription: _Subscription, message: dict[str, Any]) -> None:
        """A session's resources/subscribe or unsubscribe, told to its GET stream wherever it runs."""
        group = message.get("group")
        if not isinstance(group, str):
            return
        async with self._control_lock:  # in the order they came
            try:
                if message.get("op") == "join" and group not in self.joined:
                    await subscription.join(group)
                    self.joined.append(group)
                elif message.get("op") == "leave" and group in self.joined:
                    self.joined.remove(group)
                    await subscription.leave(group)
            except Exception as exc:  # the layer failed: this stream cannot follow its session any more
                self.fail(f"the channel layer failed ({type(exc).__name__})")

    def _batch(self, first: Any) -> tuple[bytes, bool]:
        """``first`` and whatever else is queued, as one write; and whether the stream ends after it."""
        messages = [first]
        while not self._queue.empty() and messages[-1] is not _CLOSE:
            messages.append(self._queue.get_nowait())
        ends = messages[-1] is _CLOSE
        if ends:
            messages.pop()
        self._pending.clear()  # everything queued is in this batch
        seen: set[tuple[str, Any]] = set()
        chunks = []
        for message in messages:
            key = _idempotent_key(message)
            if key is not None:
                if key in seen:
                    continue
                seen.add(key)
            chunks.append(sse.event(self._tag(message)))
        return b"".join(chunks), ends

    def _ending(self) -> bytes | None:
        if self._failed is not None:
            return self._unavailable(self._failed)
        return None if self.handshake else self._final()

    async def events(self) -> AsyncIterator[bytes]:
        """The SSE body. Group memberships are released however the stream ends."""
        layer = get_channel_layer() if self.groups else None
        watch = LayerWatch.of(layer) if layer is not None else None
        subscription: _Subscription | None = None
        _open_streams.add(self)
        try:
            if layer is not None and watch is not None:
                timeout = get_settings().LISTEN_LAYER_TIMEOUT_SECONDS
                subscription = self._subscription = _subscription_for(layer, self)
                try:
                    await watch.ensure_healthy()
                    for group in self.groups:
                        async with asyncio.timeout(timeout):
                            await subscription.join(group)
                        self.joined.append(group)
                except Exception as exc:
                    if isinstance(exc, LayerUnavailable):
                        reason = str(exc)
                    elif isinstance(exc, TimeoutError):
                        reason = f"the channel layer did not answer within {timeout} s"
                    else:
                        reason = "the channel layer failed"
                    throttle.log(
                        logger,
                        logging.WARNING,
                        "subscribe",
                        "Listen stream %r could not subscribe: %s",
                        self.subscription_id,
                        reason if isinstance(exc, LayerUnavailable | TimeoutError) else repr(exc),
                    )
                    yield self._unavailable(reason)
                    return
                watch.register(self)
            if not self.handshake:
                yield sse.event(
                    self._tag(
                        notification("notifications/subscriptions/acknowledged", {"notifications": self.honoured})
                    )
                )
            else:
                # A server sends the status line and headers with the first body bytes: send them now, not
                # with the first event or keepalive (the client would wait for its connect that long).
                yield sse.OPENED
            for snapshot in self._snapshots:
                for message in await snapshot():
                    yield sse.event(self._tag(message))
            await _release_request_thread()
            if subscription is not None:
                subscription.start()
            while True:
                try:
                    async with asyncio.timeout(self._keepalive):
                        item = await self._queue.get()
                except TimeoutError:
                    yield sse.KEEPALIVE  # a half-open connection is only noticed on write
                    continue
                if item is not _CLOSE:
                    await write_budget.take()  # what arrives meanwhile joins this write
                    chunk, ends = self._batch(item)
                    if chunk:
                        yield chunk
                    if not ends:
                        continue
                ending = self._ending()
                if ending is not None:
                    yield ending
                return
        finally:
            _open_streams.discard(self)
            self._release()
            if watch is not None:
                watch.unregister(self)
            for task in list(self._controls):
                task.cancel()
            if subscription is not None:
                joined, self.joined = list(self.joined), []
                await subscription.close(joined)

    def _release(self) -> None:
        if self.principal is not None:
            streams = _admitted.get(self.principal)
            if streams is not None:
                streams.discard(self)
                if not streams:
                    _admitted.pop(self.principal, None)


# -- how a stream hears its groups ------------------------------------------------------------------


class _Subscription:
    """A stream's group memberships in the channel layer: joined, started, left."""

    async def join(self, group: str) -> None:
        raise NotImplementedError

    async def leave(self, group: str) -> None:
        raise NotImplementedError

    def start(self) -> None:
        """Start handing messages to the stream (after its acknowledgement and snapshots)."""

    async def close(self, joined: list[str]) -> None:
        for group in joined:
            with contextlib.suppress(Exception):
                await self.leave(group)


def _subscription_for(layer: Any, stream: ListenStream) -> _Subscription:
    mode = get_settings().LISTEN_FANOUT
    if mode == "process" or (mode == "auto" and not isinstance(layer, InMemoryChannelLayer)):
        return _Shared(Fanout.of(layer), stream)
    return _OwnChannel(layer, stream)


class _OwnChannel(_Subscription):
    """``LISTEN_FANOUT = "stream"``: a layer channel of the stream's own, read by a task of its own."""

    def __init__(self, layer: Any, stream: ListenStream) -> None:
        self.layer, self.stream = layer, stream
        self.channel: str | None = None
        self.reader: asyncio.Task[None] | None = None

    async def join(self, group: str) -> None:
        if self.channel is None:
            self.channel = await self.layer.new_channel()
        await self.layer.group_add(group, self.channel)

    async def leave(self, group: str) -> None:
        if self.channel is not None:
            await self.layer.group_discard(group, self.channel)

    def start(self) -> None:
        if self.channel is not None:
            self.reader = asyncio.ensure_future(self._read(self.channel))
            self.reader.add_done_callback(self._reader_done)

    async def _read(self, channel: str) -> None:
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

    async def close(self, joined: list[str]) -> None:
        if self.reader is not None:
            self.reader.cancel()
        await super().close(joined)


class _Shared(_Subscription):
    """``LISTEN_FANOUT = "process"``: the loop's :class:`Fanout` channel for each group."""

    def __init__(self, fanout: Fanout, stream: ListenStream) -> None:
        self.fanout, self.stream = fanout, stream

    async def join(self, group: str) -> None:
        await self.fanout.join(group, self.stream)

    async def leave(self, group: str) -> None:
        await self.fanout.leave(group, self.stream)


class _Group:
    def __init__(self) -> None:
        self.channel: str | None = None
        self.streams: set[ListenStream] = set()
        self.ready: asyncio.Future[None] | None = None
        self.reader: asyncio.Task[None] | None = None


class Fanout:
    """One layer channel per group per event loop, shared by the loop's listen streams of that group.

    A notification for a group is received (and deserialised) once per process, then queued for
    each local stream of the group: a function call each, no task switch, nothing at all for a
    stream that already has the same list change or resource update waiting. (With a channel per
    stream, every stream's reader task wakes up for every message: at 1,000 streams and 20
    notifications a second that alone kept a core busy.) It also subscribes Redis once per group
    instead of once per stream.

    A group's final message published on this loop reaches its streams here at once
    (:meth:`before_publish`); the layer's copy of it, coming back later, is dropped by each of them.
    Not while a message the loop published to one of its groups is still on its way through the
    layer: the final message would overtake it (a task's last status message, or a resource update
    the task's body sent before it ended).
    """

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

    async def join(self, group: str, stream: ListenStream) -> None:
        entry = self.groups.get(group)
        if entry is None:
            entry = self.groups[group] = _Group()
            # In a task of its own: a client that goes away meanwhile must not leave the others waiting.
            entry.ready = asyncio.ensure_future(self._subscribe(group, entry))
            entry.ready.add_done_callback(lambda f: f.cancelled() or f.exception())
        assert entry.ready is not None
        await asyncio.shield(entry.ready)
        if self.groups.get(group) is not entry:  # it failed meanwhile and was dropped
            raise LayerUnavailable("the channel layer failed; try again shortly")
        entry.streams.add(stream)

    async def _subscribe(self, group: str, entry: _Group) -> None:
        try:
            async with asyncio.timeout(get_settings().LISTEN_LAYER_TIMEOUT_SECONDS):
                entry.channel = await self.layer.new_channel()
                await self.layer.group_add(group, entry.channel)
        except BaseException:
            if self.groups.get(group) is entry:
                del self.groups[group]
            raise
        entry.reader = asyncio.ensure_future(self._read(group, entry))

    async def leave(self, group: str, stream: ListenStream) -> None:
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

    async def _read(self, group: str, entry: _Group) -> None:
        assert entry.channel is not None
        try:
            while True:
                message = await self.layer.receive(entry.channel)
                if "echo" in message:
                    self._on_the_way.pop(message["echo"], None)
                for stream in list(entry.streams):
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


class WriteBudget:
    """``LISTEN_WRITES_PER_SECOND`` for the listen streams of a process together (a token bucket).

    A write of notifications to a stream takes a token; without one the stream waits its turn (first
    come, first served), and what it receives meanwhile goes out in the same write. So pushing to
    many streams costs at most that many writes a second, whatever the notification rate, and
    ordinary requests keep the rest of the event loop. At most 50 ms' worth go out back to back:
    a change pushed to 1,000 streams is spread over a second instead of taking the loop at once.
    """

    BURST_SECONDS = 0.05

    def __init__(self) -> None:
        self._tokens = 0.0
        self._rate: float | None = None
        self._stamp = 0.0

    async def take(self) -> None:
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


def admit_stream(stream: ListenStream, principal: str) -> ListenStream:
    """Count ``stream`` against this process's limits for ``principal`` (a digest), or refuse it.

    Raises -32603 with HTTP 429 when ``principal`` already holds ``LISTEN_MAX_STREAMS_PER_PRINCIPAL``
    streams in this process, or the process ``LISTEN_MAX_STREAMS``. A stream counts from here until
    it ends (or is dropped unserved).
    """
    settings = get_settings()
    total = sum(len(streams) for streams in _admitted.values())
    if settings.LISTEN_MAX_STREAMS is not None and total >= settings.LISTEN_MAX_STREAMS:
        raise McpJsonRpcError(
            INTERNAL_ERROR,
            f"Too many listen streams: this server process holds at most {settings.LISTEN_MAX_STREAMS}; "
            "try again later",
            {"maxListenStreams": settings.LISTEN_MAX_STREAMS},
            http_status=429,
        )
    mine = _admitted.setdefault(principal, weakref.WeakSet())
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


class LayerWatch:
    """Checks the channel layer for the listen streams of one event loop (see the module docstring)."""

    _watches: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, LayerWatch] = weakref.WeakKeyDictionary()

    def __init__(self, layer: Any) -> None:
        self.layer = layer
        self.streams: weakref.WeakSet[ListenStream] = weakref.WeakSet()
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

    def register(self, stream: ListenStream) -> None:
        self.streams.add(stream)
        self._hook_reconnects()
        if self._loop_task is None or self._loop_task.done():
            self._loop_task = asyncio.ensure_future(self._run())

    def unregister(self, stream: ListenStream) -> None:
        self.streams.discard(stream)

    async def ensure_healthy(self) -> None:
        """Return if the layer passed its last check; else check it now (raises :class:`LayerUnavailable`)."""
        if not self.healthy and not await self.probe():
            raise LayerUnavailable("the channel layer failed its check; try again shortly")

    def fail(self, reason: str, streams: list[ListenStream] | None = None, *, unhealthy: bool = True) -> None:
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

    async def probe(self) -> bool:
        """Send a probe through the layer and wait for it; one probe at a time per watch."""
        if self._probing is None or self._probing.done():
            self._probing = asyncio.ensure_future(self._probe_once())
        return await asyncio.shield(self._probing)

    async def _probe_once(self) -> bool:
        timeout = get_settings().LISTEN_LAYER_TIMEOUT_SECONDS
        token = uuid.uuid4().hex
        pong: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._pongs[token] = pong
        try:
            async with asyncio.timeout(timeout):
                if self._channel is None or self._reader is None or self._reader.done():
                    self._channel = await self.layer.new_channel()
                    self._reader = asyncio.ensure_future(self._read_probes(self._channel))
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

    async def _read_probes(self, channel: str) -> None:
        while True:
            message = await self.layer.receive(channel)
            if message.get("type") == PROBE_TYPE:
                pong = self._pongs.get(str(message.get("token")))
                if pong is not None and not pong.done():
                    pong.set_result(None)

    async def _run(self) -> None:
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
                await self.probe()

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

    def publish_failed(self, group: str, exc: BaseException) -> None:
        streams = [s for s in self.streams if group in s.joined]
        if streams:
            self.fail(f"a notification could not be published ({type(exc).__name__})", streams, unhealthy=False)
        self.check_soon()
        if self._loop_task is None or self._loop_task.done():
            self._loop_task = asyncio.ensure_future(self._run())


def _publish_failed(group: str, exc: BaseException) -> None:
    watch = LayerWatch.current()
    if watch is not None:
        watch.publish_failed(group, exc)


on_publish_failure(_publish_failed)
on_publish(Fanout.before_publish)


# -- threads -----------------------------------------------------------------------------------------


async def _release_request_thread() -> None:
    """Let go of the OS thread Django's ASGI handler keeps for this request while the stream is open.

    Django serves each request in an asgiref ``ThreadSensitiveContext``: the first sync call of the
    request (the ``request_started`` receivers, sync middleware, the session) starts a one-thread
    executor that lives until the response is finished, i.e. as long as a listen stream stays open:
    a thread and some 70 KB per stream. Nothing sync runs while a stream waits, so close the
    database connections of that thread in it (what ``request_finished`` would have done: pooled
    connections go back to the pool) and shut the executor down. The request's later sync calls
    (Django's ``response.close()`` at the end) run on a small pool shared by all released streams,
    so thousands of streams ending at once start no thread each.
    """
    found = request_thread_executors()
    if found is None or found[0] is None:
        return  # not under Django's ASGI handler (e.g. a test client): nothing held
    context, executors = found
    executor: Any = executors.get(context)
    if executor is None:
        return
    await sync_to_async(connections.close_all)()
    if executors.get(context) is executor:
        executors[context] = _stream_end_executor
    executor.shutdown(wait=False)


class _SharedExecutor(ThreadPoolExecutor):
    """The pool the released streams' requests end on: shared, so never shut down by one of them.

    asgiref's ``ThreadSensitiveContext`` shuts a request's executor down at its end, joining it in a
    thread of its own when the executor is truthy: this one is falsy, so no thread is started.
    """

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Left running: other requests end on it."""

    def __bool__(self) -> bool:
        return False


_stream_end_executor = _SharedExecutor(max_workers=4, thread_name_prefix="django-mcp-stream-end")
"""Process-wide by nature: a bounded pool for the ends of every released listen stream's request."""


# -- process-wide --------------------------------------------------------------------------------------


def close_listen_streams() -> int:
    """Gracefully end every open listen stream of this process (e.g. at shutdown). Returns how many."""
    streams = list(_open_streams)
    for stream in streams:
        stream.close()
    return len(streams)


def open_listen_streams() -> int:
    """How many listen streams this process holds open."""
    return len(_open_streams)
