"""The audit log (opt-in, ``DJANGO_MCP["AUDIT"]``): one row per ``tools/call`` — who, which tool, when,
the outcome, how long — written off the request's path (the rows of calls close together in one INSERT),
kept ``AUDIT_RETENTION_SECONDS``, shown in the admin. Arguments are kept only as each tool's
``audit_arguments`` (or ``AUDIT_ARGUMENTS``) says.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.core.signals import setting_changed
from django.db import connections, models, router
from django.utils import timezone

from .conf import SETTINGS_NAME, get_settings
from .server.lifecycle import lifecycle
from .server.request import McpRequest
from .server.signals import tool_called
from .server.tools.definition import Tool

logger = logging.getLogger("django_mcp")
REDACTED = "[redacted]"
_SWEEP_EVERY_SECONDS = 60
_BATCH_SECONDS = 0.05  # rows of calls this close together go in one INSERT


class ToolCall(models.Model):
    """One ``tools/call`` served by this project (the audit log)."""

    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="The Django user who called, when the caller was one.",
    )
    caller = models.CharField(
        max_length=200, help_text="Who called: the user, another principal's kind, or an anonymous client's address."
    )
    server = models.CharField(max_length=100, help_text="The endpoint (its URL namespace).")
    tool = models.CharField(max_length=128, db_index=True)
    outcome = models.CharField(
        max_length=20, help_text="result, error (an isError result), task, input_required, refused or cancelled."
    )
    duration_ms = models.FloatField(help_text="Until the answer was ready (a task's body runs on after it).")
    arguments = models.JSONField(null=True, blank=True, help_text="As the tool's audit rule keeps them.")

    class Meta:
        app_label = "django_mcp"
        ordering = ("-created_at",)
        verbose_name = "tool call"

    def __str__(self) -> str:
        return f"{self.tool} by {self.caller} ({self.outcome})"


def kept_arguments(rule: str | tuple[str, ...], arguments: Any) -> Any:
    """What the audit row keeps of ``arguments``: nothing, everything, or everything but the named keys."""
    if rule == "none" or not isinstance(arguments, Mapping):
        return None
    if rule == "all":
        return dict(arguments)
    return {key: REDACTED if key in rule else value for key, value in arguments.items()}


def _caller(request: McpRequest) -> tuple[Any, str]:
    user = request.user
    if user is not None and getattr(user, "is_authenticated", False):
        return user, str(user.get_username())
    key = request.limit_key  # another principal (never its secret: its kind), or anonymous@address
    return None, key if key.startswith("anonymous@") else key.split(":", 1)[0] + " principal"


async def arecord(
    sender: Any, request: McpRequest, tool: str, outcome: str, duration: float, definition: Tool, **kwargs: Any
) -> None:
    """The ``tool_called`` receiver: take the row's values now, write it in the background."""
    mcp = get_settings()
    user, caller = _caller(request)
    rule = definition.audit_arguments if definition.audit_arguments is not None else mcp.AUDIT_ARGUMENTS
    # Values, not a model instance: the answer waits for this receiver; the instance is built with the batch.
    row = {
        "created_at": timezone.now(),
        "user_id": user.pk if user is not None else None,
        "caller": caller[:200],
        "server": request.namespace[:100],
        "tool": tool,
        "outcome": outcome,
        "duration_ms": round(duration * 1000, 3),
        "arguments": kept_arguments(rule, request.params.get("arguments")),
    }
    if not request.served_by_asgi:  # under WSGI the loop ends with the response: write it now
        await _awrite([row], mcp.AUDIT_RETENTION_SECONDS)
        return
    _pending.append(row)
    global _flusher
    loop = asyncio.get_running_loop()
    if _flusher is None or _flusher.done() or _flusher.get_loop() is not loop:
        _flusher = loop.create_task(_aflush_soon(mcp.AUDIT_RETENTION_SECONDS))


# Process-wide by nature: the rows of this process waiting for their batch (their fields), and the task
# that writes them.
_pending: list[dict[str, Any]] = []
_flusher: asyncio.Task[None] | None = None
_last_sweep = 0.0


async def _aflush_soon(retention: int) -> None:
    """Write the waiting rows in batches, one INSERT each, every ``_BATCH_SECONDS`` while rows come."""
    while _pending:
        await asyncio.sleep(_BATCH_SECONDS)
        rows = _pending[:]
        del _pending[:]
        await _awrite(rows, retention)


async def aflush(grace_seconds: float = 0) -> None:
    """Write what waits now (at shutdown)."""
    rows = _pending[:]
    del _pending[:]
    if rows:
        await _awrite(rows, get_settings().AUDIT_RETENTION_SECONDS)


async def _awrite(rows: list[dict[str, Any]], retention: int) -> None:
    try:
        await sync_to_async(_save, thread_sensitive=False)(rows, retention)
    except Exception as exc:  # the audit never fails a call; an outage is logged, not raised
        logger.warning("Could not write %d audit row(s) (%s …): %r", len(rows), rows[0]["tool"], exc)


def _save(rows: list[dict[str, Any]], retention: int) -> None:
    global _last_sweep
    alias = router.db_for_write(ToolCall)
    try:
        ToolCall.objects.using(alias).bulk_create([ToolCall(**row) for row in rows])
        if time.monotonic() - _last_sweep > _SWEEP_EVERY_SECONDS:
            _last_sweep = time.monotonic()
            sweep(retention, using=alias)
    finally:
        connections[alias].close()  # a worker thread of asgiref's pool: give its connection back


def sweep(retention: int, using: str | None = None) -> int:
    """Delete audit rows older than ``retention`` seconds; how many went."""
    cutoff = timezone.now() - timedelta(seconds=retention)
    deleted, _ = ToolCall.objects.using(using or router.db_for_write(ToolCall)).filter(created_at__lt=cutoff).delete()
    return deleted


def follow_settings(*args: Any, setting: str | None = None, **kwargs: Any) -> None:
    """Listen to ``tool_called`` only while ``AUDIT`` is on (no signal is built otherwise)."""
    if setting not in (None, SETTINGS_NAME):
        return
    try:
        on = get_settings().AUDIT
    except ImproperlyConfigured:  # reported by check E002
        return
    if on:
        tool_called.connect(arecord, dispatch_uid="django_mcp.audit")
        if aflush not in lifecycle.hooks:
            lifecycle.on_shutdown(aflush)
    else:
        tool_called.disconnect(dispatch_uid="django_mcp.audit")


setting_changed.connect(follow_settings, dispatch_uid="django_mcp.audit.settings")
