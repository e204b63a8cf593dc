"""The store's operations: plain sync ORM code, run by :class:`~.task_store.TaskStore` in its threads.

The plain ORM is the reference; with ``TASK_FAST_PATHS`` the hottest statements (a task's read by
primary key, its insertion, its compare-and-set) run as prepared SQL (``prepared``) instead.

Everything here happens on the database the router writes ``Task`` to (``default`` without
routers): its transactions, its raw SQL and the cap counters (``TaskQuota`` rows go where the tasks
go, whatever the router says of them).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from datetime import timedelta
from typing import Any

from django.db import OperationalError, connections, router, transaction
from django.utils import timezone

from ..models import ACTIVE, TERMINAL, Task, TaskStatus
from ..wire import DETAILED_FIELDS
from . import prepared
from .caps import forget_tasks, give_back, increment, take_place
from .database import fast_paths, first, new_task_id, parse_id, tasks_database
from .errors import deadlocked

DEADLOCK_RETRIES = 5
"""How often a creation chosen as a deadlock's victim counts again before the error is the caller's."""


def load_with_user(task_id: Any) -> Task | None:
    """A task with its user, as a fleet worker loads the task it runs (``None``: no such task)."""
    return Task.objects.select_related("user").filter(pk=task_id).first()


def _read(
    pk: Any, owner: str | None = None, *, after_write: bool = False, only: tuple[str, ...] | None = None
) -> Task | None:
    """One task by primary key (and owner), as the ORM loads it; ``only``: as :func:`~.prepared.read_plan`'s."""
    alias = router.db_for_write(Task) if after_write else router.db_for_read(Task)
    if fast_paths():
        return prepared.read(connections[alias], pk, owner, only)
    tasks = Task.objects.using(alias).filter(pk=pk)
    if owner is not None:
        tasks = tasks.filter(owner=owner)
    if only is not None:
        tasks = tasks.only(*only, "expires_at")
    return first(tasks)


def _update_active(pk: Any, returning: tuple[str, ...] | None = None, **values: Any) -> Task | None:
    """Compare-and-set an active task's ``values``: the moved task (``returning``'s fields loaded), or None.

    With fast paths where ``UPDATE … RETURNING`` works, one statement (:func:`~.prepared.update_active`);
    else the ORM's update, then a read.
    """
    conn = connections[router.db_for_write(Task)]
    if fast_paths() and prepared.update_returns_rows(conn):
        return prepared.update_active(conn, pk, returning, values)
    if not Task.objects.filter(pk=pk, status__in=ACTIVE).update(**values):
        return None
    return _read(pk, after_write=True, only=returning)


def _insert(row: Task) -> None:
    """``INSERT`` a new task: ``save(force_insert=True)``, or its prepared statement (without the model's signals)."""
    alias = router.db_for_write(Task)
    if fast_paths():
        prepared.insert(row, alias)
    else:
        row.save(force_insert=True, using=alias)


def create(
    *,
    task_id: uuid.UUID | None = None,
    tool: str,
    owner: str,
    scope: str,
    arguments: Mapping[str, Any],
    status_message: str,
    ttl_ms: int | None,
    poll_interval_ms: int,
    max_tasks: int,
    max_tasks_per_owner: int | None,
    node: str,
    lease_seconds: float | None,
    request_meta: Mapping[str, Any] | None = None,
    backend: str = "",
    counted_as: str = "",
    traceparent: str = "",
    **creator: Any,
) -> Task:
    """Insert a ``working`` task, committed (durably) before this returns.

    Refuses past ``max_tasks`` retained by the server (``scope``) or ``max_tasks_per_owner`` by
    ``counted_as`` (default: its owner). Each cap is one conditional increment of a counter row, so
    the cost does not grow with the table; only a creation at a cap sweeps expired tasks (the lazy
    sweep) before it refuses.
    """
    now = timezone.now()
    row = Task(
        id=task_id or new_task_id(),
        tool=tool,
        owner=owner,
        counted_as=counted_as or owner,
        scope=scope,
        arguments=dict(arguments),
        status_message=status_message,
        ttl_ms=ttl_ms,
        poll_interval_ms=poll_interval_ms,
        created_at=now,
        updated_at=now,
        expires_at=now + timedelta(milliseconds=ttl_ms) if ttl_ms is not None else None,
        node=node,
        # A queued task (no node) has no lease: nobody runs it yet, so nobody may reap it.
        lease_expires_at=now + timedelta(seconds=lease_seconds) if lease_seconds is not None else None,
        request_meta=dict(request_meta or {}),
        backend=backend,
        traceparent=traceparent,
        **creator,  # user and owner_kind: who created it, for people reading the admin
    )
    # Every creation on a server updates its counter row, whose lock is held until commit. On
    # PostgreSQL the counting commits on its own without waiting for its WAL flush, so creations do
    # not queue behind each other's fsync; the task's own commit comes later in the same WAL and
    # waits for the flush, which makes the counting durable too. A failed insert gives the place back.
    alias = tasks_database()
    conn = connections[alias]
    separate = conn.vendor == "postgresql"
    # With one counter, that commit is the counting statement's own (autocommit): one round trip,
    # and the row's lock is never held across one. Two counters move together, in a transaction.
    counted = separate and max_tasks_per_owner is None and not conn.in_atomic_block
    if not (counted and increment(scope, "", max_tasks, commit_lazily=True)):
        for attempt in range(DEADLOCK_RETRIES + 1):
            try:
                with transaction.atomic(using=alias):
                    if separate and fast_paths():
                        with conn.cursor() as cursor:
                            cursor.execute("SET LOCAL synchronous_commit TO OFF")
                    take_place(scope, "", max_tasks, now)  # the server's row first, then the owner's: one order
                    if max_tasks_per_owner is not None:
                        take_place(scope, row.counted_as, max_tasks_per_owner, now)
                    if not separate:
                        _insert(row)
                        return row
                break
            except OperationalError as exc:
                # InnoDB: concurrent first creations insert the same counter row, and waiting on each
                # other's duplicate-key locks one of them is chosen as a deadlock victim, rolled back.
                if not deadlocked(exc) or attempt == DEADLOCK_RETRIES or conn.in_atomic_block:
                    raise
    try:
        _insert(row)
    except BaseException:
        give_back(scope, row.counted_as if max_tasks_per_owner is not None else None)
        raise
    return row


def visible(task_id: Any, owner: str, only: tuple[str, ...] | None = None) -> Task | None:
    """The task if it exists, belongs to ``owner`` and has not expired (an expired one is deleted).

    ``only``: the fields to load besides the primary key and ``expires_at`` (:func:`~.rows.read_plan`).
    """
    pk = parse_id(task_id)
    if pk is None:
        return None
    task = _read(pk, owner, only=only)
    if task is not None and task.is_expired():
        forget_tasks(Task.objects.filter(pk=pk))
        return None
    return task


def visible_many(task_ids: Iterable[Any], owner: str) -> list[Task]:
    """The visible tasks among ``task_ids``, in the order given."""
    pks = [pk for pk in (parse_id(t) for t in task_ids) if pk is not None]
    found = {t.pk: t for t in Task.objects.filter(pk__in=pks, owner=owner).live(timezone.now())}
    return [found[pk] for pk in dict.fromkeys(pks) if pk in found]


def watch_many(task_ids: Iterable[Any], owner: str) -> list[Task]:
    """:func:`visible_many`, each task marked ``watched``: from this commit on, its changes are published.

    Marked before the listen stream reads its snapshot: a change committed before the mark is in the
    snapshot; one committed after it sees the mark (in the same statement or transaction that makes
    the change, see :func:`django_mcp.tasks.runner.publish`) and is published.
    """
    tasks = visible_many(task_ids, owner)
    unwatched = [task for task in tasks if not task.watched]
    if unwatched:
        Task.objects.filter(pk__in=[task.pk for task in unwatched], watched=False).update(watched=True)
        for task in unwatched:
            task.watched = True
    return tasks


def reload(task_id: Any) -> Task | None:
    pk = parse_id(task_id)
    return _read(pk) if pk is not None else None


def set_status_message(task_id: Any, message: str) -> Task | None:
    """Change an active task's status message; None if the task is no longer active."""
    return _update_active(task_id, status_message=message, updated_at=timezone.now())


def park(task_id: Any, requests: Mapping[str, Any]) -> Task | None:
    """Add outstanding input requests and move the task to ``input_required``."""
    with transaction.atomic(using=tasks_database()):
        task = first(Task.objects.select_for_update().filter(pk=task_id, status__in=ACTIVE))
        if task is None:
            return None
        task.input_requests = {**task.input_requests, **requests}
        task.input_keys = [*task.input_keys, *requests]
        task.status = TaskStatus.INPUT_REQUIRED
        task.updated_at = timezone.now()
        task.save(update_fields=["input_requests", "input_keys", "status", "updated_at"])
        return task


def answer(task_id: Any, owner: str, responses: Mapping[str, Any]) -> tuple[Task | None, list[str]]:
    """Record answers to outstanding requests; others (never issued, already answered) are ignored.

    When nothing is outstanding any more the task is ``working`` again.
    Returns the task (None if not visible) and the keys that were accepted.
    """
    pk = parse_id(task_id)
    if pk is None:
        return None, []
    now = timezone.now()
    with transaction.atomic(using=tasks_database()):
        task = first(Task.objects.select_for_update().filter(pk=pk, owner=owner).live(now))
        if task is None:
            return None, []
        accepted = [k for k in responses if k in task.input_requests] if task.status in ACTIVE else []
        if not accepted:
            return task, []
        task.input_responses = {**task.input_responses, **{k: responses[k] for k in accepted}}
        task.input_requests = {k: v for k, v in task.input_requests.items() if k not in accepted}
        if not task.input_requests:
            task.status = TaskStatus.WORKING
        task.updated_at = now
        task.save(update_fields=["input_responses", "input_requests", "status", "updated_at"])
        return task, accepted


def take_answers(task_id: Any, keys: Iterable[str]) -> dict[str, Any] | None:
    """Consume the received answers among ``keys``; None if the task is gone or no longer active."""
    keys = list(keys)
    with transaction.atomic(using=tasks_database()):
        task = first(Task.objects.select_for_update().filter(pk=task_id, status__in=ACTIVE))
        if task is None:
            return None
        taken = {k: task.input_responses[k] for k in keys if k in task.input_responses}
        if taken:
            task.input_responses = {k: v for k, v in task.input_responses.items() if k not in taken}
            task.save(update_fields=["input_responses"])
        return taken


def request_cancel(task_id: Any, owner: str | None) -> Task | None:
    """Flag an active task for cancellation; returns the task (None if not visible)."""
    pk = parse_id(task_id)
    if pk is None:
        return None
    tasks = Task.objects.filter(pk=pk).live(timezone.now())
    if owner is not None:
        tasks = tasks.for_owner(owner)
    tasks.active().update(cancel_requested=True)
    return first(tasks)


FINISHED_FIELDS = (*DETAILED_FIELDS, "watched", "tool")
"""What a finished task is published with (``publish`` checks ``watched``), and its ``str()``."""


def finish(
    task_id: Any, status: str, *, result: Any = None, error: Any = None, message: str | None = None
) -> Task | None:
    """Compare-and-set an active task to a terminal status. None if it was already terminal (or gone).

    The task comes back with what its notification needs (the rest deferred): its arguments, answers
    and request metadata, often the biggest columns, are not read back to be dropped.
    """
    return _update_active(task_id, FINISHED_FIELDS, **finished_values(status, result, error, message))


def finished_values(status: str, result: Any, error: Any, message: str | None) -> dict[str, Any]:
    """The values :func:`finish` sets."""
    assert status in TERMINAL
    fields: dict[str, Any] = {"status": status, "updated_at": timezone.now()}
    fields.update(result=result, error=error, input_requests={})
    if message is not None:
        fields["status_message"] = message
    return fields


LEASE_BATCH = 500
"""Tasks per statement when renewing leases: a process may run tens of thousands, more than SQLite
(32,766) or PostgreSQL (65,535) take as parameters of one statement, and one statement's parse of them
would take megabytes."""


def renew_leases(task_ids: list[str], lease_seconds: float) -> tuple[list[str], list[str], list[str]]:
    """Batched lease renewal for the tasks this process runs (:data:`LEASE_BATCH` per statement).

    Returns the ids flagged for cancellation, those with answers waiting to be
    taken (a fallback for a lost wake-up), and those no longer active (deleted,
    or finished elsewhere).
    """
    flagged: list[str] = []
    answered: list[str] = []
    vanished: list[str] = []
    for start in range(0, len(task_ids), LEASE_BATCH):
        batch = task_ids[start : start + LEASE_BATCH]
        mine = Task.objects.filter(pk__in=batch).active()
        mine.update(lease_expires_at=timezone.now() + timedelta(seconds=lease_seconds))
        state = {
            str(pk): (cancel, bool(answers))
            for pk, cancel, answers in mine.values_list("pk", "cancel_requested", "input_responses")
        }
        flagged.extend(t for t, (cancel, _) in state.items() if cancel)
        answered.extend(t for t, (_, has_answers) in state.items() if has_answers)
        vanished.extend(t for t in batch if t not in state)
    return flagged, answered, vanished


def reap_lapsed(running: Iterable[str], error: dict[str, Any], limit: int = 500) -> list[Task]:
    """Fail active tasks whose lease lapsed (their process died, or never started them): a bounded, batched sweep.

    ``running`` are the tasks the caller runs, and has just renewed: they are passed over, in Python
    (they may be tens of thousands; renewed, they come last). Returns the tasks failed here
    (compare-and-set: each is failed by exactly one sweeper).
    """
    now = timezone.now()
    running = set(running)
    lapsed = [
        pk
        for pk in Task.objects.active()
        .filter(lease_expires_at__lte=now)
        .order_by("lease_expires_at")
        .values_list("pk", flat=True)[:limit]
        if str(pk) not in running
    ]
    reaped = []
    for pk in lapsed:
        moved = Task.objects.filter(pk=pk, status__in=ACTIVE, lease_expires_at__lte=now).update(
            status=TaskStatus.FAILED, error=error, status_message=error["message"], input_requests={}, updated_at=now
        )
        if moved:
            reaped.append(pk)
    return list(Task.objects.using(tasks_database()).filter(pk__in=reaped))  # as written: a replica may lag


def fail_stale_queued(timeout_seconds: float, error: dict[str, Any], limit: int = 500) -> list[Task]:
    """Fail tasks queued for a worker fleet that no worker claimed within ``timeout_seconds``.

    A queued row has no lease (nobody runs it, so the lease reaper never sees it): a job the backend
    lost, or one that failed before claiming, would leave it working for ever. Compare-and-set on
    node "" so a worker claiming it at the same moment wins or loses cleanly.
    """
    now = timezone.now()
    cutoff = now - timedelta(seconds=timeout_seconds)
    stale = list(
        Task.objects.active()
        .filter(node="", created_at__lte=cutoff)
        .exclude(backend="")
        .order_by("created_at")
        .values_list("pk", flat=True)[:limit]
    )
    failed = []
    for pk in stale:
        moved = Task.objects.filter(pk=pk, status__in=ACTIVE, node="").update(
            status=TaskStatus.FAILED, error=error, status_message=error["message"], input_requests={}, updated_at=now
        )
        if moved:
            failed.append(pk)
    return list(Task.objects.using(tasks_database()).filter(pk__in=failed))  # as written: a replica may lag


def set_job(task_id: Any, job_id: str) -> None:
    Task.objects.filter(pk=task_id).update(job_id=job_id[:64])


def forget(task_id: Any) -> int:
    """Delete one task and release its place in the caps (an enqueue that failed)."""
    return forget_tasks(Task.objects.filter(pk=task_id))


def claim(task_id: Any, node: str, lease_seconds: float, status_message: str) -> Task | None:
    """Compare-and-set a queued task to running on ``node``: never claimed before, not cancelled, still live.

    None when it was cancelled (or claimed, or deleted) first: the body must not run.
    """
    now = timezone.now()
    moved = (
        Task.objects.filter(pk=task_id, status=TaskStatus.WORKING, node="", cancel_requested=False)
        .live(now)
        .update(
            node=node,
            lease_expires_at=now + timedelta(seconds=lease_seconds),
            status_message=status_message,
            updated_at=now,
        )
    )
    return _read(task_id, after_write=True) if moved else None


def cancel_queued(task_id: Any) -> Task | None:
    """Cancel a task no worker has claimed yet (compare-and-set on node ""); None if a worker has it."""
    moved = (
        Task.objects.filter(pk=task_id, status__in=ACTIVE, node="")
        .exclude(backend="")
        .update(
            status=TaskStatus.CANCELLED,
            status_message="Cancelled before it started",
            cancel_requested=True,
            input_requests={},
            updated_at=timezone.now(),
        )
    )
    return _read(task_id, after_write=True) if moved else None


def fail_if_owner_gone(task: Task, error: dict[str, Any]) -> Task:
    """Finish an active task whose lease lapsed (its process died or gave up on it); else return it as is.

    The caller checks first that the task does not run in its own process.
    """
    now = timezone.now()
    if task.status not in ACTIVE or not task.lease_lapsed():
        return task
    Task.objects.filter(pk=task.pk, status__in=ACTIVE, lease_expires_at__lte=now).update(
        status=TaskStatus.FAILED, error=error, status_message=error["message"], input_requests={}, updated_at=now
    )
    return first(Task.objects.using(tasks_database()).filter(pk=task.pk)) or task  # as written: a replica may lag
