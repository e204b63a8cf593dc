"""Change notifications through the Channels layer, so every server process hears them.

Publishing is best-effort and bounded: :func:`abroadcast` never raises and gives up after
``LISTEN_LAYER_TIMEOUT_SECONDS``. A failed publish is not silent for the listen streams it was
meant for: the failure listeners (the listen streams' layer watch, ``listen/layer_health.py``) end the local
streams of that group with an error and check the layer at once. Repeated failures during an outage
log a bounded number of lines (:class:`~.outages.Throttle`).
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.conf import settings
from django.dispatch import Signal

from ..conf import get_settings
from ..protocol.jsonrpc import notification
from .outages import quiet_layer_logs, throttle

logger = logging.getLogger("django_mcp")

MESSAGE_TYPE = "mcp.notification"
_background: set[asyncio.Task[None]] = set()

before_broadcast = Signal()
"""Sent on the publishing loop before each notification goes to the channel layer, with ``layer``,
``group`` and ``envelope``. A receiver answers True when it handed the message to streams of this
loop: the listen streams' fan-out (``listen/fanout.py``) hands a group's final message to the loop's
own streams at once when it may (see :func:`abroadcast`'s ``final``), and tags the loop's other
messages so that it knows when they came back."""

broadcast_failed = Signal()
"""Sent on the publishing loop when a publish to ``group`` failed with ``exc`` (the listen streams'
layer watch ends the local streams of that group and checks the layer)."""


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
    if _delivered_here(layer, group, envelope):
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


def _delivered_here(layer: Any, group: str, envelope: dict[str, Any]) -> bool:
    """Send :data:`before_broadcast`; whether a receiver delivered ``envelope`` to this loop's streams already."""
    # Robust: the layer's way still works, so a failing receiver (logged by Django) must not cost the publish.
    responses = before_broadcast.send_robust(None, layer=layer, group=group, envelope=envelope)
    return any(response is True for _, response in responses)


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
    broadcast_failed.send_robust(None, group=group, exc=exc)  # a receiver's failure is logged, never raised


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
