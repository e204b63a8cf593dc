"""Where the tasks live and how a task is addressed."""

from __future__ import annotations

import uuid
from typing import Any

from django.db import router
from django.db.models import QuerySet

from ..conf import get_tasks_settings
from ..models import Task


def tasks_database() -> str:
    """The alias of the database the tasks live on: where the router writes ``Task``."""
    return router.db_for_write(Task)


def fast_paths() -> bool:
    """Whether the store takes its fast paths (``TASK_FAST_PATHS``): prepared SQL, reads on the event loop."""
    return get_tasks_settings().TASK_FAST_PATHS


def parse_id(task_id: Any) -> uuid.UUID | None:
    """The task id as a UUID, or None if it cannot be one (no task has it)."""
    try:
        return uuid.UUID(str(task_id))
    except ValueError:
        return None


def new_task_id() -> uuid.UUID:
    """A UUIDv4: 122 random bits from the OS's CSPRNG.

    The id may be all that stands between a caller and a task on an open server (every caller is
    the same anonymous principal there), so none of its bits tells when it was made.
    """
    return uuid.uuid4()


def first(tasks: QuerySet[Task]) -> Task | None:
    """The first row, unordered: the lookups here are by primary key, and ``Task.Meta.ordering`` is for people."""
    return next(iter(tasks.order_by()[:1]), None)
