"""The tasks extension's system checks (IDs share the ``django_mcp`` namespace and are never reused)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from django.apps import AppConfig
from django.conf import settings
from django.core.checks import CheckMessage, Error, Tags, register
from django.core.checks import Warning as CheckWarning
from pydantic import ValidationError

from ..conf import SETTINGS_NAME
from .conf import get_tasks_settings

if TYPE_CHECKING:
    from ..server.tools import Tool
    from .plugin import McpTasks


@register(Tags.compatibility)
def check_task_settings(
    app_configs: Sequence[AppConfig] | None = None, databases: Sequence[str] | None = None, **kwargs: Any
) -> list[CheckMessage]:
    """E004: leases renewed no faster than they lapse."""
    try:
        tasks = get_tasks_settings()
    except (ValidationError, Exception):  # reported by the core's settings check (E001/E002)
        return []
    if tasks.TASK_LEASE_RENEW_SECONDS < tasks.TASK_LEASE_SECONDS:
        return []
    return [
        Error(
            f"{SETTINGS_NAME}['TASK_LEASE_RENEW_SECONDS'] ({tasks.TASK_LEASE_RENEW_SECONDS}) must be shorter than "
            f"TASK_LEASE_SECONDS ({tasks.TASK_LEASE_SECONDS}).",
            hint="Renew leases well within their length (e.g. a third of it), or live tasks are failed as orphans.",
            id="django_mcp.E004",
        )
    ]


def check_plugin(plugin: McpTasks, tools: list[Tool]) -> list[CheckMessage]:
    """W006: tasks without a channel layer (cancel, input and pushes then wait for the database)."""
    if "default" in getattr(settings, "CHANNEL_LAYERS", {}):
        return []
    return [
        CheckWarning(
            f"McpTasks on server {plugin.namespace!r} has no channel layer: tasks/cancel and tasks/update reach a "
            "running task only at its next lease renewal, and listen streams get no task notifications.",
            hint='Set CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}} for one '
            "process, channels_redis.pubsub.RedisPubSubChannelLayer for several.",
            obj=plugin.namespace,
            id="django_mcp.W006",
        )
    ]
