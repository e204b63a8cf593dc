"""The caps' counters: one row per server and per owner, counted at creation, given back at deletion.

Every deletion of tasks goes through :func:`forget_tasks`, which takes them off their counters.
"""

from __future__ import annotations

import logging
from datetime import datetime

from django.db import DatabaseError, IntegrityError, transaction
from django.db.models import Count, F, QuerySet
from django.db.models.functions import Greatest
from django.utils import timezone

from ..models import Task, TaskQuota
from . import prepared
from .database import fast_paths, tasks_database
from .errors import TaskLimitReached

logger = logging.getLogger("django_mcp.tasks")


def give_back(scope: str, owner: str | None) -> None:
    """Undo the counting of a task whose row was not inserted (best effort: a lost place until a recount)."""
    try:
        for who in ("", owner) if owner is not None else ("",):
            TaskQuota.objects.using(tasks_database()).filter(scope=scope, owner=who).update(
                count=Greatest(F("count") - 1, 0)
            )
    except DatabaseError:
        logger.warning("Could not give back the place of a task that was not created (mcp_clear_tasks --recount)")


def take_place(scope: str, owner: str, limit: int, now: datetime) -> None:
    """Count one more task on the server's (``owner`` empty) or an owner's counter, or raise at the cap.

    One ``UPDATE … SET count = count + 1 WHERE count < limit``: the database serialises concurrent
    creations on the row (held to commit), so the cap is exact across processes.
    """
    swept = False
    while not increment(scope, owner, limit):
        count = (
            TaskQuota.objects.using(tasks_database())
            .select_for_update()
            .filter(scope=scope, owner=owner)
            .values_list("count", flat=True)
        ).first()
        if count is None:
            _start_counting(scope, owner)
            continue  # the row did not exist: made from a count (here or by a concurrent creation), try again
        if count < limit:
            # A concurrent first creation committed the row after this one's UPDATE found none: the
            # row is locked now, so the next UPDATE counts on it.
            continue
        if swept or not sweep_expired_batch(now, scope):
            raise TaskLimitReached("owner" if owner else "server", limit)
        swept = True  # expired tasks freed their place: try once more


def increment(scope: str, owner: str, limit: int, *, commit_lazily: bool = False) -> bool:
    """``UPDATE quota SET count = count + 1 WHERE scope, owner AND count < limit``; whether a row moved.

    ``commit_lazily`` (PostgreSQL, autocommit, fast paths): the statement's own commit does not wait
    for its WAL flush (:func:`~.prepared.increment`).
    """
    alias = tasks_database()
    if fast_paths():
        return prepared.increment(alias, scope, owner, limit, commit_lazily=commit_lazily)
    counters = TaskQuota.objects.using(alias).filter(scope=scope, owner=owner, count__lt=limit)
    return counters.update(count=F("count") + 1) == 1


def _start_counting(scope: str, owner: str) -> None:
    """Make the missing counter row from a count of the tasks (unless a concurrent creation just did)."""
    alias = tasks_database()
    tasks = Task.objects.using(alias).filter(scope=scope)
    initial = (tasks.filter(counted_as=owner) if owner else tasks).count()
    try:
        with transaction.atomic(using=alias):  # a savepoint: another process may create the row at the same moment
            TaskQuota.objects.using(alias).create(scope=scope, owner=owner, count=initial)
    except IntegrityError:
        pass


def forget_tasks(tasks: QuerySet[Task]) -> int:
    """Delete ``tasks`` and take them off the counters of their server and owner. Returns how many."""
    alias = tasks_database()
    tasks = tasks.using(alias)  # counted where they are deleted, not on a read replica
    with transaction.atomic(using=alias):
        groups = list(tasks.order_by().values("scope", "counted_as").annotate(n=Count("pk")))
        deleted, _ = tasks.delete()
        per_server: dict[str, int] = {}
        for group in groups:
            per_server[group["scope"]] = per_server.get(group["scope"], 0) + group["n"]
        # Servers' rows before owners' rows, as creation takes them: no lock-order deadlock.
        decrements = [(scope, "", n) for scope, n in sorted(per_server.items())]
        decrements += sorted((g["scope"], g["counted_as"], g["n"]) for g in groups if g["counted_as"])
        for scope, owner, n in decrements:
            TaskQuota.objects.using(alias).filter(scope=scope, owner=owner).update(count=Greatest(F("count") - n, 0))
    return deleted


def sweep_expired(now: datetime | None = None) -> int:
    """Delete expired tasks (sync; for the management command and the admin). Returns how many."""
    return forget_tasks(Task.objects.expired(now or timezone.now()))


SWEEP_BATCH = 500
"""The most expired tasks one creation at a cap, or one maintenance round, deletes."""


def sweep_expired_batch(now: datetime | None = None, scope: str | None = None) -> int:
    """Delete up to :data:`SWEEP_BATCH` expired tasks (of one server, with ``scope``). Returns how many."""
    expired = Task.objects.expired(now or timezone.now())
    if scope is not None:
        expired = expired.filter(scope=scope)
    pks = list(expired.order_by().values_list("pk", flat=True)[:SWEEP_BATCH])
    return forget_tasks(Task.objects.filter(pk__in=pks)) if pks else 0


def recount() -> None:
    """Rebuild the cap counters from the rows (after tasks were deleted outside the store)."""
    alias = tasks_database()
    with transaction.atomic(using=alias):
        TaskQuota.objects.using(alias).all().delete()  # rebuilt, locked, from a count at the next creation
