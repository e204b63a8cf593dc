"""Change notifications through the Channels layer, so every server process hears them.

Publishing is best-effort and bounded: :func:`abroadcast` never raises and gives up after
``LISTEN_LAYER_TIMEOUT_SECONDS``. A failed publish is not silent for the listen streams it was
meant for: the failure listeners (the listen streams' layer watch, ``listen/layer_health.py``) end the local
streams of that group with an error and check the layer at once. Repeated failures during an outage
log a bounded number of lines (:class:`Throttle`).
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.conf import settings

from ..conf import get_settings
from ..protocol.errors import INTERNAL_ERROR, McpJsonRpcError
from ..protocol.jsonrpc import notification

logger = logging.getLogger("django_mcp")

MESSAGE_TYPE = "mcp.notification"
_background: set[asyncio.Task[None]] = set()

FailureListener = Callable[[str, BaseException], None]
_failure_listeners: list[FailureListener] = []
PublishHook = Callable[[Any, str, dict[str, Any]], bool]  # True: it handed the message to this loop's streams
_publish_hooks: list[PublishHook] = []

REPEAT_WINDOW_SECONDS = 60.0
"""During an outage, each kind of failure logs its first occurrence, then at most one line per window."""


class Throttle:
    """A log line per key at most once per ``window`` seconds, saying how many were held back since.

    ``log`` answers whether it logged. ``recovered`` logs one line when a failing key works again.
    """

    def __init__(self, window: float = REPEAT_WINDOW_SECONDS) -> None:
        self.window = window
        self._last: dict[str, float] = {}
        self._held: dict[str, int] = {}
        self._failures: dict[str, int] = {}
        self._lock = threading.Lock()  # broadcast() may run in any thread

    def log(self, log: logging.Logger, level: int, key: str, message: str, *args: Any, exc_info: Any = None) -> bool:
        now = time.monotonic()
        with self._lock:
            self._failures[key] = self._failures.get(key, 0) + 1
            last = self._last.get(key)
            if last is not None and now - last < self.window:
                self._held[key] = self._held.get(key, 0) + 1
                return False
            held = self._held.pop(key, 0)
            self._last[key] = now
            first = last is None
        if held:
            message += " (%d more like this in the last %.0f s)"
            args = (*args, held, now - last if last is not None else 0.0)
        # A traceback only the first time: the repeats are the same story.
        log.log(level, message, *args, exc_info=exc_info if first else None)
        return True

    def recovered(self, log: logging.Logger, key: str, message: str) -> None:
        with self._lock:
            failures = self._failures.pop(key, 0)
            self._last.pop(key, None)
            self._held.pop(key, None)
        if failures:
            log.warning("%s (after %d failure(s))", message, failures)

    def failing(self, key: str) -> bool:
        return key in self._failures

    def reset(self) -> None:
        """Forget every failure (tests: each sees the first failure of its outage)."""
        with self._lock:
            self._last.clear()
            self._held.clear()
            self._failures.clear()


throttle = Throttle()
"""The throttle of every repeated failure django_mcp logs about the channel layer."""


def unavailable(log: logging.Logger, key: str, what: str, exc: BaseException, answer: str) -> McpJsonRpcError:
    """The 503 a request gets when a service it needs (``what``) failed with ``exc``; logged once a minute."""
    throttle.log(log, logging.WARNING, key, "%s unavailable: %r", what, exc)
    return McpJsonRpcError(INTERNAL_ERROR, answer, http_status=503)


class RepeatFilter(logging.Filter):
    """A logging filter: a record whose message template was seen within ``window`` seconds is dropped.

    The next record that passes says how many were dropped. django_mcp puts one on the
    ``channels_redis.pubsub`` logger (see :func:`quiet_layer_logs`), whose receive loop logs a traceback
    every second while Redis is unreachable, and one per channel cleaned up during an outage.
    """

    def __init__(self, window: float = REPEAT_WINDOW_SECONDS) -> None:
        super().__init__()
        self.window = window
        self._last: dict[str, float] = {}
        self._held: dict[str, int] = {}
        self._lock = threading.Lock()

    def filter(self, record: logging.LogRecord) -> bool:
        key = str(record.msg)
        now = time.monotonic()
        with self._lock:
            last = self._last.get(key)
            if last is not None and now - last < self.window:
                self._held[key] = self._held.get(key, 0) + 1
                return False
            self._last[key] = now
            held = self._held.pop(key, 0)
        if held:
            record.msg = f"{record.msg} ({held} more like this in the last {now - (last or now):.0f} s, not logged)"
            record.exc_info = None  # the same traceback as the first one
            record.exc_text = None
        return True


_LAYER_LOGGERS = ("channels_redis.pubsub",)


def quiet_layer_logs() -> None:
    """Put a :class:`RepeatFilter` on the channel layer libraries' loggers (once)."""
    for name in _LAYER_LOGGERS:
        layer_logger = logging.getLogger(name)
        if not any(isinstance(f, RepeatFilter) for f in layer_logger.filters):
            layer_logger.addFilter(RepeatFilter())


def on_publish_failure(listener: FailureListener) -> None:
    """Call ``listener(group, exc)`` (on the publishing loop) whenever a publish to ``group`` fails."""
    if listener not in _failure_listeners:
        _failure_listeners.append(listener)


def on_publish(hook: PublishHook) -> None:
    """Call ``hook(layer, group, envelope)`` on the publishing loop before each publish goes to the layer.

    The hook answers whether it handed the message to streams of this loop.

    The listen streams' hook (``listen/fanout.py``) hands a group's final message to the loop's own streams
    at once when it may (see :func:`abroadcast`'s ``final``), and tags the loop's other messages so
    that it knows when they came back.
    """
    if hook not in _publish_hooks:
        _publish_hooks.append(hook)


def has_channel_layer() -> bool:
    """Whether a default channel layer is configured (without it there are no notifications)."""
    return "default" in getattr(settings, "CHANNEL_LAYERS", {})


def resource_group(uri: str) -> str:
    """The Channels group for updates of one resource (group names allow only a few characters)."""
    return "django_mcp.resource." + hashlib.sha256(uri.encode()).hexdigest()[:48]


async def abroadcast(group: str, message: dict[str, Any], *, final: bool = False) -> None:
    """Send a notification to every listen stream in ``group``, in every process. Never raises.

    Gives up after ``LISTEN_LAYER_TIMEOUT_SECONDS`` (a hung Redis must not hang the caller). A failure
    ends this process's listen streams of ``group`` with an error (they missed the notification) and
    has the layer checked at once.

    ``final``: nothing will ever be published to ``group`` after this (its subject ended: a task
    reached a terminal status; never a list or resource group, which live on). The publishing loop's
    own streams of the group get it at once (with ``LISTEN_FANOUT`` by process), before the layer's
    round trip, unless a message the loop published earlier to one of their groups has not come back
    from the layer yet (then it goes the layer's way, after that one). Every stream drops whatever
    of the group reaches it after the final message: the layer's copy of it, or an earlier state
    another process published that is still on its way. So a stream never ends on a stale state and
    never gets the final message twice.
    """
    layer = get_channel_layer()
    if layer is None:
        return
    quiet_layer_logs()
    envelope: dict[str, Any] = {"type": MESSAGE_TYPE, "message": message, "group": group}
    if final:
        envelope["final"] = True
    cancelled = False
    if _delivered_by_hooks(layer, group, envelope):
        # This loop's own streams have it: let them write it before the layer's client packs and
        # sends the publish (a turn of the loop; their clients wait). Cancelled meanwhile, it is
        # still published (the other processes' streams need it), then the cancellation goes on.
        try:
            await asyncio.sleep(0)
        except asyncio.CancelledError:
            cancelled = True
    try:
        async with asyncio.timeout(get_settings().LISTEN_LAYER_TIMEOUT_SECONDS):
            await layer.group_send(group, envelope)
    except Exception as exc:  # the layer is best-effort; the caller's work must not fail with it
        _publish_failed(group, message, exc)
    else:
        if throttle.failing("publish"):
            throttle.recovered(logger, "publish", "Publishing through the channel layer works again")
    if cancelled:
        raise asyncio.CancelledError


def _delivered_by_hooks(layer: Any, group: str, envelope: dict[str, Any]) -> bool:
    """Offer ``envelope`` to the publish hooks; whether one delivered it to this loop's streams already."""
    delivered = False
    for hook in _publish_hooks:
        try:
            delivered = hook(layer, group, envelope) or delivered
        except Exception:  # the layer's way still works: a failing hook must not cost the publish
            logger.exception("A publish hook failed")
    return delivered


def _publish_failed(group: str, message: dict[str, Any], exc: Exception) -> None:
    throttle.log(
        logger,
        logging.WARNING,
        "publish",
        "Could not publish %s to %s through the channel layer: %s",
        message.get("method"),
        group,
        _describe(exc),
        exc_info=exc,
    )
    for listener in list(_failure_listeners):
        try:
            listener(group, exc)
        except Exception:  # a listener must not turn a logged failure into a raised one
            logger.exception("A publish-failure listener failed")


def _describe(exc: BaseException) -> str:
    if isinstance(exc, TimeoutError):
        return f"no answer within {get_settings().LISTEN_LAYER_TIMEOUT_SECONDS} s"
    return f"{type(exc).__name__}: {exc}"


def broadcast(group: str, message: dict[str, Any]) -> None:
    """:func:`abroadcast` from any context: scheduled on a running loop, else run to completion."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        async_to_sync(abroadcast)(group, message)
        return
    task = loop.create_task(abroadcast(group, message))
    _background.add(task)
    task.add_done_callback(_background.discard)


def notify_resource_updated(uri: str) -> None:
    """Tell every listen stream subscribed to ``uri`` that the resource changed (sync or async callers)."""
    broadcast(resource_group(uri), notification("notifications/resources/updated", {"uri": uri}))


async def anotify_resource_updated(uri: str) -> None:
    """Async twin of :func:`notify_resource_updated`, which waits until the layer took the message."""
    await abroadcast(resource_group(uri), notification("notifications/resources/updated", {"uri": uri}))
