"""Change notifications through the Channels layer, so every server process hears them."""

from __future__ import annotations

import asyncio
import hashlib
import logging
from typing import TYPE_CHECKING, Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.apps import apps
from django.conf import settings

from ..protocol.jsonrpc import notification

if TYPE_CHECKING:
    from .registry import Registry

logger = logging.getLogger("django_mcp")

MESSAGE_TYPE = "mcp.notification"
_LIST_CHANGED = {
    "tools": "notifications/tools/list_changed",
    "prompts": "notifications/prompts/list_changed",
    "resources": "notifications/resources/list_changed",
}
_background: set[asyncio.Task[None]] = set()


def has_channel_layer() -> bool:
    """Whether a default channel layer is configured (without it there are no notifications)."""
    return "default" in getattr(settings, "CHANNEL_LAYERS", {})


def resource_group(uri: str) -> str:
    """The Channels group for updates of one resource (group names allow only a few characters)."""
    return "django_mcp.resource." + hashlib.sha256(uri.encode()).hexdigest()[:48]


async def abroadcast(group: str, message: dict[str, Any]) -> None:
    """Send a notification to every listen stream in ``group``, in every process. Never raises."""
    layer = get_channel_layer()
    if layer is None:
        return
    try:
        await layer.group_send(group, {"type": MESSAGE_TYPE, "message": message})
    except Exception:  # the layer is best-effort; the caller's work must not fail with it
        logger.warning("Could not publish %s to %s", message.get("method"), group, exc_info=True)


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


def announce_list_changed(registry: Registry[Any]) -> None:
    """Tell listeners a registry changed; registrations during startup are not changes."""
    if not apps.ready:
        return
    broadcast(registry.channel_group, notification(_LIST_CHANGED[registry.kind], {}))


def notify_resource_updated(uri: str) -> None:
    """Tell every listen stream subscribed to ``uri`` that the resource changed (sync or async callers)."""
    broadcast(resource_group(uri), notification("notifications/resources/updated", {"uri": uri}))


async def anotify_resource_updated(uri: str) -> None:
    """Async twin of :func:`notify_resource_updated`, which waits until the layer took the message."""
    await abroadcast(resource_group(uri), notification("notifications/resources/updated", {"uri": uri}))
