"""The processes that run tasks, each as it last said (:class:`~..models.Node`): written, pruned, read."""

from __future__ import annotations

import time
from datetime import datetime, timedelta
from typing import Any

from django.db import connections

from ..models import Node
from .database import tasks_database

FORGOTTEN_AFTER = timedelta(days=1)
"""A process not seen for this long is deleted by the next one that writes its row."""
PRUNE_EVERY_SECONDS = 60.0
"""Each process deletes forgotten rows at most this often."""
_pruned_at = float("-inf")


def record_node(name: str, now: datetime, **said: Any) -> None:
    """Write the process ``name``'s row as of ``now`` (``said``: the row's other fields), and delete
    the rows of processes not seen for :data:`FORGOTTEN_AFTER` (at most every :data:`PRUNE_EVERY_SECONDS`)."""
    database = tasks_database()
    # One upsert: a row written twice at once (two loops of one process) stays one row, its start kept.
    target = ["name"] if connections[database].features.supports_update_conflicts_with_target else None
    Node.objects.using(database).bulk_create(
        [Node(name=name, started_at=now, seen_at=now, **said)],
        update_conflicts=True,
        unique_fields=target,
        update_fields=["seen_at", *said],
    )
    global _pruned_at
    if time.monotonic() - _pruned_at >= PRUNE_EVERY_SECONDS:  # a fleet worker writes its row after every job
        _pruned_at = time.monotonic()
        Node.objects.using(database).filter(seen_at__lt=now - FORGOTTEN_AFTER).delete()


def seen_since(since: datetime, scope: str | None, limit: int = 100) -> list[Node]:
    """The processes seen since ``since``, most recently seen first (``scope``: one server's)."""
    nodes = Node.objects.using(tasks_database()).filter(seen_at__gte=since)
    if scope is not None:
        nodes = nodes.filter(server=scope)
    return list(nodes.order_by("-seen_at")[:limit])
