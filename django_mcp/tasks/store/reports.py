"""Counts over the tasks table for the gauges and the health check: plain ORM, read-only, off the hot path.

Called from a thread of their own (the metric reader's, asgiref's pool), which closes its connection after.
"""

from __future__ import annotations

from datetime import datetime

from django.db.models import Count

from ..models import ACTIVE, Task


def counts_by_server_and_status(using: str) -> list[tuple[str, str, int]]:
    """(server, status, tasks) for every pair with tasks."""
    rows = Task.objects.using(using).values_list("scope", "status").annotate(n=Count("id")).order_by()
    return [(scope, status, n) for scope, status, n in rows]


def unclaimed_fleet_counts(using: str) -> list[tuple[str, int]]:
    """(server, tasks) of the fleet tasks no worker has claimed yet."""
    queued = Task.objects.using(using).filter(status__in=ACTIVE, node="").exclude(backend="")
    return [(scope, n) for scope, n in queued.values_list("scope").annotate(n=Count("id")).order_by()]


def oldest_unclaimed_fleet_task() -> datetime | None:
    """When the oldest fleet task no worker has claimed yet was created, or None."""
    return (
        Task.objects.filter(status__in=ACTIVE, node="")
        .exclude(backend="")
        .order_by("created_at")
        .values_list("created_at", flat=True)
        .first()
    )
