"""The tasks extension's OpenTelemetry gauges: tasks by server and status, and fleet tasks no worker claimed yet.

One grouped query each, at each metric collection, on the reader's thread (its connection closed after).
"""

from __future__ import annotations

from collections.abc import Iterable

from django.db import connections, router

from ..server.telemetry import Observation, gauge
from .models import Task
from .store.reports import counts_by_server_and_status, unclaimed_fleet_counts


def _tasks_by_status() -> Iterable[Observation]:
    alias = router.db_for_read(Task)
    try:
        counts = counts_by_server_and_status(alias)
        return [(float(n), {"mcp.server": scope, "mcp.task.status": status}) for scope, status, n in counts]
    finally:
        connections[alias].close()


def _queued_for_workers() -> Iterable[Observation]:
    alias = router.db_for_read(Task)
    try:
        return [(float(n), {"mcp.server": scope}) for scope, n in unclaimed_fleet_counts(alias)]
    finally:
        connections[alias].close()


gauge("django_mcp.tasks", "Tasks stored, by server and status", _tasks_by_status)
gauge("django_mcp.fleet.queued", "Fleet tasks no worker has claimed yet, by server", _queued_for_workers)
