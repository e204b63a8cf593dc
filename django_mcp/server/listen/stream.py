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
group's notification once and hands it to its streams of the group (:class:`Fanout`, unless
``LISTEN_FANOUT`` is "stream"); a burst of notifications queued for a stream goes out as one write
(a task's newer state replacing the one still queued, repeats of the same idempotent notification —
a list change, an update of one resource — sent once); and the streams of a process make at most
``LISTEN_WRITES_PER_SECOND`` writes together (:class:`WriteBudget`), so a busy notification source
cannot starve ordinary requests. Streams are bounded: ``LISTEN_MAX_STREAMS_PER_PRINCIPAL`` and
``LISTEN_MAX_STREAMS`` per process (:func:`admit_stream`)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from typing import Any

from channels.layers import get_channel_layer

from ...conf import get_settings
from ...protocol import sse
from ...protocol.errors import INTERNAL_ERROR, McpJsonRpcError
from ...protocol.jsonrpc import META_SUBSCRIPTION_ID, error_response, notification, result_response
from ..notify import MESSAGE_TYPE
from ..outages import throttle
from .fanout import Subscription, subscription_for
from .layer_health import LayerUnavailable, LayerWatch
from .limits import admitted_streams, open_streams, write_budget
from .threads import arelease_request_thread

logger = logging.getLogger("django_mcp")


CONTROL_TYPE = "mcp.session.control"


_CLOSE = object()


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


class _TaskState:
    """A task's newest state queued for a stream, not yet written."""

    __slots__ = ("message", "task_id")

    def __init__(self, task_id: str, message: dict[str, Any]) -> None:
        self.task_id, self.message = task_id, message


def _state_key(message: Any) -> str | None:
    """A task's state notification: a newer one of the same task, queued behind it, supersedes it."""
    if not isinstance(message, dict) or message.get("method") != "notifications/tasks":
        return None
    params = message.get("params")
    task_id = params.get("taskId") if isinstance(params, dict) else None
    return task_id if isinstance(task_id, str) else None


def _idempotent_key(message: Any) -> tuple[str, Any] | None:
    method = message.get("method") if isinstance(message, dict) else None
    if method not in _IDEMPOTENT:
        return None
    params = message.get("params")
    return method, params.get("uri") if isinstance(params, dict) else None


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
        self._latest_states: dict[str, _TaskState] = {}  # task id -> its newest state queued, not yet written
        self._tail: Any = None  # the last item queued, while the queue holds it
        self._subscription: Subscription | None = None
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
                self._tail = _CLOSE
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
        flood of them costs one write per stream, and never fills the queue. A task's state queued
        and not yet written is superseded by its newer one: only the newest goes out, where it came
        (after whatever was sent before it); with nothing queued behind the older state, the newer one
        takes its place.
        """
        if self._closing:
            return False
        item: Any = message
        key = _idempotent_key(message)
        if key is not None:
            if key in self._pending:
                return True
            self._pending.add(key)
        elif (task_id := _state_key(message)) is not None:
            queued = self._latest_states.get(task_id)
            if queued is not None and queued is self._tail:
                queued.message = message
                return True
            item = self._latest_states[task_id] = _TaskState(task_id, message)
        try:
            self._queue.put_nowait(item)
            self._tail = item
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
            task = asyncio.ensure_future(self._acontrol(self._subscription, message))
            self._controls.add(task)
            task.add_done_callback(self._controls.discard)
        return True

    async def _acontrol(self, subscription: Subscription, message: dict[str, Any]) -> None:
        """A session's resources/subscribe or unsubscribe, told to its GET stream wherever it runs."""
        group = message.get("group")
        if not isinstance(group, str):
            return
        async with self._control_lock:  # in the order they came
            try:
                if message.get("op") == "join" and group not in self.joined:
                    await subscription.ajoin(group)
                    self.joined.append(group)
                elif message.get("op") == "leave" and group in self.joined:
                    self.joined.remove(group)
                    await subscription.aleave(group)
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
        seen: set[tuple[str, Any]] = set()
        chunks = []
        for message in messages:
            if isinstance(message, _TaskState):
                if self._latest_states.get(message.task_id) is not message:
                    continue  # superseded by a newer state of the task further on in this batch
                message = message.message
            elif (key := _idempotent_key(message)) is not None:
                if key in seen:
                    continue
                seen.add(key)
            chunks.append(sse.event(self._tag(message)))
        # Everything queued is in this batch.
        self._pending.clear()
        self._latest_states.clear()
        self._tail = None
        return b"".join(chunks), ends

    def _ending(self) -> bytes | None:
        if self._failed is not None:
            return self._unavailable(self._failed)
        return None if self.handshake else self._final()

    async def aevents(self) -> AsyncIterator[bytes]:
        """The SSE body. Group memberships are released however the stream ends."""
        layer = get_channel_layer() if self.groups else None
        watch = LayerWatch.of(layer) if layer is not None else None
        subscription: Subscription | None = None
        open_streams.add(self)
        try:
            if layer is not None and watch is not None:
                subscription = self._subscription = subscription_for(layer, self)
                failure = await self._ajoin(subscription, watch)
                if failure is not None:
                    yield self._unavailable(failure)
                    return
            yield self._opening()
            for snapshot in self._snapshots:
                for message in await snapshot():
                    yield sse.event(self._tag(message))
            await arelease_request_thread()
            if subscription is not None:
                subscription.start()
            async with contextlib.aclosing(self._afollow()) as chunks:
                async for chunk in chunks:
                    yield chunk
        finally:
            open_streams.discard(self)
            self._release()
            if watch is not None:
                watch.unregister(self)
            for task in list(self._controls):
                task.cancel()
            if subscription is not None:
                joined, self.joined = list(self.joined), []
                await subscription.aclose(joined)

    async def _ajoin(self, subscription: Subscription, watch: LayerWatch) -> str | None:
        """Join the stream's groups and have ``watch`` follow the stream; or why the layer cannot serve it."""
        timeout = get_settings().LISTEN_LAYER_TIMEOUT_SECONDS
        try:
            await watch.aensure_healthy()
            for group in self.groups:
                async with asyncio.timeout(timeout):
                    await subscription.ajoin(group)
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
            return reason
        watch.register(self)
        return None

    def _opening(self) -> bytes:
        if not self.handshake:
            return sse.event(
                self._tag(notification("notifications/subscriptions/acknowledged", {"notifications": self.honoured}))
            )
        # A server sends the status line and headers with the first body bytes: send them now, not
        # with the first event or keepalive (the client would wait for its connect that long).
        return sse.OPENED

    async def _afollow(self) -> AsyncGenerator[bytes, None]:
        """The notifications as they come, batched, with keepalives, until the stream ends."""
        while True:
            try:
                async with asyncio.timeout(self._keepalive):
                    item = await self._queue.get()
            except TimeoutError:
                yield sse.KEEPALIVE  # a half-open connection is only noticed on write
                continue
            if item is not _CLOSE:
                await write_budget.atake()  # what arrives meanwhile joins this write
                chunk, ends = self._batch(item)
                if chunk:
                    yield chunk
                if not ends:
                    continue
            ending = self._ending()
            if ending is not None:
                yield ending
            return

    def _release(self) -> None:
        if self.principal is not None:
            streams = admitted_streams.get(self.principal)
            if streams is not None:
                streams.discard(self)
                if not streams:
                    admitted_streams.pop(self.principal, None)


# -- how a stream hears its groups ------------------------------------------------------------------
