"""Task rows as SEP-2663 wire objects."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from django.utils import timezone

from ..protocol.errors import internal_error
from .models import Task, TaskStatus

EXTENSION_ID = "io.modelcontextprotocol/tasks"


def timestamp(moment: datetime) -> str:
    """ISO 8601 in UTC with milliseconds, e.g. ``2026-08-01T10:30:00.000Z``."""
    if moment.tzinfo is None:  # USE_TZ = False: Django's naive datetimes are the project's TIME_ZONE
        moment = moment.replace(tzinfo=timezone.get_default_timezone()).astimezone(UTC)
    elif moment.tzinfo is not UTC:  # (what Django reads back is UTC already)
        moment = moment.astimezone(UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def task_fields(task: Task) -> dict[str, Any]:
    """The ``Task`` object: identity, status and timing."""
    wire: dict[str, Any] = {"taskId": str(task.id), "status": task.status}
    if task.status_message:
        wire["statusMessage"] = task.status_message
    wire["createdAt"] = timestamp(task.created_at)
    wire["lastUpdatedAt"] = timestamp(task.updated_at)
    wire["ttlMs"] = task.ttl_ms
    wire["pollIntervalMs"] = task.poll_interval_ms
    return wire


DETAILED_FIELDS = (
    "id", "status", "status_message", "created_at", "updated_at", "ttl_ms", "poll_interval_ms",
    "input_requests", "result", "error",
)  # fmt: skip
"""The fields :func:`detailed_task` reads: a task loaded with only these (and what its reader checks) serves it."""


def detailed_task(task: Task) -> dict[str, Any]:
    """The ``DetailedTask``: what ``tasks/get`` answers and ``notifications/tasks`` carries."""
    wire = task_fields(task)
    if task.status == TaskStatus.INPUT_REQUIRED:
        wire["inputRequests"] = task.input_requests
    elif task.status == TaskStatus.COMPLETED:
        wire["result"] = task.result or {"content": []}
    elif task.status == TaskStatus.FAILED:
        wire["error"] = task.error or internal_error("Task failed").to_error()
    return wire


def create_task_result(task: Task) -> dict[str, Any]:
    """The flat ``CreateTaskResult`` that answers the ``tools/call`` in place of its result."""
    return {"resultType": "task", **task_fields(task)}
