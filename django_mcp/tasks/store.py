"""The one door between task code and the ORM.

The functions here are plain sync ORM code. :class:`TaskStore` runs them for
async callers in a small thread pool of its own (one per plugin), recycling
connections around each call (background tasks have no request to do it for
them). On a loop's own connection instead, when it is free: ``tasks/get``'s read
(``loop_read``, ``loop_read_pg``) and, on PostgreSQL, a task's final write.

Everything here happens on the database the router writes ``Task`` to (``default`` without
routers): its transactions, its raw SQL and the cap counters (``TaskQuota`` rows go where the tasks
go, whatever the router says of them).
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
import uuid
from collections.abc import Callable, Coroutine, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta
from functools import partial, wraps
from typing import Any, ParamSpec, TypeVar

from django.db import (
    DatabaseError,
    IntegrityError,
    InterfaceError,
    OperationalError,
    close_old_connections,
    connections,
    router,
    transaction,
)
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import Count, F, QuerySet
from django.db.models.functions import Greatest
from django.utils import timezone

from ..protocol.errors import INTERNAL_ERROR, McpJsonRpcError
from ..server.notify import throttle
from . import loop_read_pg
from .loop_read import USE_STORE, read_visible
from .models import ACTIVE, TERMINAL, Task, TaskQuota, TaskStatus
from .rows import ReadPlan, load_row, parse_id, read_plan
from .wire import DETAILED_FIELDS

logger = logging.getLogger("django_mcp.tasks")

P = ParamSpec("P")
R = TypeVar("R")


_sqlite_writer = threading.Lock()


def _database() -> str:
    """The alias of the database the tasks live on: where the router writes ``Task``."""
    return router.db_for_write(Task)


def _guarded(fn: Callable[P, R], *, writes: bool) -> Callable[P, R]:
    @wraps(fn)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        # A pooled or server connection is recycled around every call (Django's own rule, as for a
        # request). A SQLite connection is a file handle whose reopening (and PRAGMAs) costs more
        # than the query: each of the few store threads keeps its own.
        conn = connections[_database()]
        sqlite = conn.vendor == "sqlite"
        if not sqlite:
            close_old_connections()
        try:
            if sqlite and writes:
                # SQLite has one writer at a time, and a writer that finds the file locked sleeps
                # in its busy handler (1, 2, 5, 10 … ms): the store's threads queue here instead.
                with _sqlite_writer:
                    return fn(*args, **kwargs)
            return fn(*args, **kwargs)
        except DatabaseError as exc:
            conn.close()  # never reuse a connection that just failed
            if unmigrated(exc):
                raise tables_missing(exc) from exc
            raise
        finally:
            if not sqlite:
                close_old_connections()

    return run


# PostgreSQL's SQLSTATEs for an undefined table and column; SQLite says it in words.
_UNDEFINED_SQLSTATES = frozenset({"42P01", "42703"})
_SQLITE_UNDEFINED = ("no such table: django_mcp_", "no such column: ", "table django_mcp_")


def unmigrated(exc: DatabaseError) -> bool:
    """Whether ``exc`` says a table or column of the tasks is missing: migrations not applied."""
    if _sqlstate(exc.__cause__) in _UNDEFINED_SQLSTATES:
        return True
    return str(exc).startswith(_SQLITE_UNDEFINED)


def tables_missing(exc: DatabaseError) -> McpJsonRpcError:
    """The answer to a request that met :func:`unmigrated`: the cause and the fix, not a retry hint."""
    throttle.log(logger, logging.ERROR, "unmigrated", "The django_mcp tables are missing or out of date: %s", exc)
    return McpJsonRpcError(
        INTERNAL_ERROR,
        "Server misconfigured: the task tables are missing or out of date; "
        "its operator must run `python manage.py migrate`",
        http_status=500,
    )


# Connection failures, as PostgreSQL's SQLSTATE class 08 and its "shutting down / cannot connect now"
# codes say; psycopg gives none (None) for a refused connection or its pool's timeout.
_LOST_CONNECTION_SQLSTATES = ("08", "57P01", "57P02", "57P03")


def lost_connection(exc: BaseException) -> bool:
    """Whether ``exc`` says the database cannot be reached (not a query's own error, not a SQLite lock)."""
    cause = exc.__cause__  # the driver's own error, which Django's wrapper keeps
    if not isinstance(exc, OperationalError | InterfaceError) or cause is None:
        return False
    if not type(cause).__module__.startswith("psycopg"):
        return False  # SQLite (a lock is no outage), or a driver whose codes are not read here
    sqlstate = _sqlstate(cause)
    return sqlstate is None or sqlstate.startswith(_LOST_CONNECTION_SQLSTATES)


def _sqlstate(cause: BaseException | None) -> str | None:
    """A PostgreSQL driver error's SQLSTATE: psycopg's ``sqlstate``, psycopg2's ``pgcode``."""
    code = getattr(cause, "sqlstate", None) or getattr(cause, "pgcode", None)
    return code if isinstance(code, str) else None


class KnownOutage:
    """The database found unreachable: calls fail at once, and one a ``probe_seconds`` goes through to see.

    Without it, every concurrent request would queue for the pool's timeout in turn.
    """

    def __init__(self, probe_seconds: float = 1.0) -> None:
        self.probe_seconds = probe_seconds
        self._fail_until = 0.0  # monotonic; 0: not known to be down
        self.last_lost = float("-inf")
        """When a call last found the database unreachable (monotonic)."""

    def admit(self) -> None:
        """Raise ``OperationalError`` at once while the outage is known; let the next probe through."""
        if not self._fail_until:
            return
        now = time.monotonic()
        if now < self._fail_until:
            raise OperationalError("The database was unreachable a moment ago")
        self._fail_until = now + self.probe_seconds  # this call is the probe: the others fail at once meanwhile

    def failed(self, exc: BaseException) -> None:
        if lost_connection(exc):
            self.last_lost = time.monotonic()
            self._fail_until = self.last_lost + self.probe_seconds

    def succeeded(self) -> None:
        self._fail_until = 0.0


class TaskLimitReached(Exception):  # noqa: N818
    """Creating one more task would exceed a cap: ``which`` is ``"server"`` or ``"owner"``, ``limit`` its value."""

    def __init__(self, which: str, limit: int) -> None:
        super().__init__(f"{which} cap of {limit} reached")
        self.which = which
        self.limit = limit


def new_task_id() -> uuid.UUID:
    """A UUIDv4: 122 random bits from the OS's CSPRNG.

    The id may be all that stands between a caller and a task on an open server (every caller is
    the same anonymous principal there), so none of its bits tells when it was made.
    """
    return uuid.uuid4()


def _first(tasks: QuerySet[Task]) -> Task | None:
    """The first row, unordered: the lookups here are by primary key, and ``Task.Meta.ordering`` is for people."""
    return next(iter(tasks.order_by()[:1]), None)


def _read(
    pk: Any, owner: str | None = None, *, after_write: bool = False, only: tuple[str, ...] | None = None
) -> Task | None:
    """One task by primary key (and owner), as the ORM would load it.

    The SQL and the converters are built once per database from the model: compiling a queryset
    costs several times the query itself on the hottest paths (``tasks/get``, every task's end).
    """
    alias = router.db_for_write(Task) if after_write else router.db_for_read(Task)
    conn = connections[alias]
    plan = read_plan(conn, owner is not None, only)
    params = [Task._meta.pk.get_db_prep_value(pk, conn), *(() if owner is None else (owner,))]
    with conn.cursor() as cursor:
        cursor.execute(plan.sql, params)
        row = cursor.fetchone()
    return None if row is None else load_row(conn, plan, row)


_UPDATE_PLANS: dict[tuple[str, tuple[str, ...], tuple[str, ...] | None], tuple[str, list[Any]]] = {}


def _update_returns_rows(conn: Any) -> bool:
    """Whether ``UPDATE … RETURNING`` works here: PostgreSQL, and SQLite from 3.35 (as INSERT's does)."""
    return conn.vendor in ("postgresql", "sqlite") and bool(conn.features.can_return_columns_from_insert)


def update_plan(
    conn: BaseDatabaseWrapper, names: tuple[str, ...], returning: tuple[str, ...] | None
) -> tuple[str, list[Any], ReadPlan]:
    """``_update_active``'s SQL setting ``names``, the fields of its parameters and its ``RETURNING``'s plan.

    Built once per database from the model (also for ``loop_read_pg``'s compare-and-set from the loop).
    """
    returned = read_plan(conn, False, returning)
    plan = _UPDATE_PLANS.get((conn.alias, names, returning))
    if plan is None:
        qn = conn.ops.quote_name
        by_name = {field.name: field for field in Task._meta.concrete_fields}
        fields = [by_name[name] for name in names]
        assignments = ", ".join(f"{qn(str(field.column))} = %s" for field in fields)
        pk_column, status_column = (qn(str(by_name[name].column)) for name in ("id", "status"))
        plan = _UPDATE_PLANS[(conn.alias, names, returning)] = (
            f"UPDATE {qn(Task._meta.db_table)} SET {assignments} "  # noqa: S608 - names from the model
            f"WHERE {pk_column} = %s AND {status_column} IN ({', '.join(['%s'] * len(ACTIVE))}) "
            f"RETURNING {returned.columns}",
            fields,
        )
    return plan[0], plan[1], returned


def _update_active(pk: Any, returning: tuple[str, ...] | None = None, **values: Any) -> Task | None:
    """``UPDATE task SET … WHERE id = %s AND status IN (active) RETURNING *``: the moved task, or None.

    A compare-and-set on the task's status and the re-read of its row in one statement (one round
    trip), its SQL built once from the model. Elsewhere (SQLite before 3.35, MySQL, MariaDB, whose
    UPDATE returns no rows) the ORM's update, then a read. ``returning``: the fields to load (as
    :func:`read_plan`'s ``only``); the others load deferred.
    """
    alias = router.db_for_write(Task)
    conn = connections[alias]
    if not _update_returns_rows(conn):
        if not Task.objects.filter(pk=pk, status__in=ACTIVE).update(**values):
            return None
        return _read(pk, after_write=True, only=returning)
    sql, fields, returned = update_plan(conn, tuple(values), returning)
    params = [field.get_db_prep_save(values[field.name], conn) for field in fields]
    params += [Task._meta.pk.get_db_prep_value(pk, conn), *(status.value for status in ACTIVE)]
    with conn.cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    return None if row is None else load_row(conn, returned, row)


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
    alias = _database()
    conn = connections[alias]
    separate = conn.vendor == "postgresql"
    # With one counter, that commit is the counting statement's own (autocommit): one round trip,
    # and the row's lock is never held across one. Two counters move together, in a transaction.
    counted = separate and max_tasks_per_owner is None and not conn.in_atomic_block
    if not (counted and _increment(scope, "", max_tasks, commit_lazily=True)):
        with transaction.atomic(using=alias):
            if separate:
                with conn.cursor() as cursor:
                    cursor.execute("SET LOCAL synchronous_commit TO OFF")
            _take_place(scope, "", max_tasks, now)  # the server's row first, then the owner's: one lock order
            if max_tasks_per_owner is not None:
                _take_place(scope, row.counted_as, max_tasks_per_owner, now)
            if not separate:
                _insert(row)
                return row
    try:
        _insert(row)
    except BaseException:
        _give_back(scope, row.counted_as if max_tasks_per_owner is not None else None)
        raise
    return row


_INSERT_PLANS: dict[str, str] = {}


def _insert(row: Task) -> None:
    """``INSERT`` every column of a new task, the SQL built once per database from the model.

    What ``save(force_insert=True)`` does, less the statement's compilation (most of a creation's
    own cost) and the ``pre_save``/``post_save`` signals (as for the store's ``update()`` calls).
    """
    alias = router.db_for_write(Task)
    conn = connections[alias]
    fields = Task._meta.concrete_fields
    sql = _INSERT_PLANS.get(alias)
    if sql is None:
        qn = conn.ops.quote_name
        sql = _INSERT_PLANS[alias] = (
            f"INSERT INTO {qn(Task._meta.db_table)} ({', '.join(qn(str(field.column)) for field in fields)}) "  # noqa: S608
            f"VALUES ({', '.join(['%s'] * len(fields))})"
        )
    params = [field.get_db_prep_save(field.pre_save(row, True), conn) for field in fields]
    with conn.cursor() as cursor:
        cursor.execute(sql, params)
    row._state.adding = False
    row._state.db = alias


def _give_back(scope: str, owner: str | None) -> None:
    """Undo the counting of a task whose row was not inserted (best effort: a lost place until a recount)."""
    try:
        for who in ("", owner) if owner is not None else ("",):
            TaskQuota.objects.using(_database()).filter(scope=scope, owner=who).update(
                count=Greatest(F("count") - 1, 0)
            )
    except DatabaseError:
        logger.warning("Could not give back the place of a task that was not created (mcp_clear_tasks --recount)")


def _take_place(scope: str, owner: str, limit: int, now: datetime) -> None:
    """Count one more task on the server's (``owner`` empty) or an owner's counter, or raise at the cap.

    One ``UPDATE … SET count = count + 1 WHERE count < limit``: the database serialises concurrent
    creations on the row (held to commit), so the cap is exact across processes.
    """
    swept = False
    while not _increment(scope, owner, limit):
        count = (
            TaskQuota.objects.using(_database())
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


def _increment(scope: str, owner: str, limit: int, *, commit_lazily: bool = False) -> bool:
    """``UPDATE quota SET count = count + 1 WHERE scope, owner AND count < limit``; whether a row moved.

    Formatted from the model's names rather than compiled by the ORM (it runs on every creation).
    ``commit_lazily`` (PostgreSQL, autocommit): the statement's own commit does not wait for its
    WAL flush, as ``SET LOCAL synchronous_commit TO OFF`` would have it in a transaction.
    """
    conn = connections[_database()]
    qn = conn.ops.quote_name
    columns = {field.name: qn(str(field.column)) for field in TaskQuota._meta.concrete_fields}
    count, scope_col, owner_col = columns["count"], columns["scope"], columns["owner"]
    sql = (
        f"UPDATE {qn(TaskQuota._meta.db_table)} SET {count} = {count} + 1 "  # noqa: S608 - names from the model
        f"WHERE {scope_col} = %s AND {owner_col} = %s AND {count} < %s"
    )
    if commit_lazily:
        # Local to the statement's implicit transaction: the session's setting is left as it was.
        sql += " RETURNING set_config('synchronous_commit', 'off', true)"
    with conn.cursor() as cursor:
        cursor.execute(sql, [scope, owner, limit])
        return bool(cursor.rowcount == 1)


def _start_counting(scope: str, owner: str) -> None:
    """Make the missing counter row from a count of the tasks (unless a concurrent creation just did)."""
    alias = _database()
    tasks = Task.objects.using(alias).filter(scope=scope)
    initial = (tasks.filter(counted_as=owner) if owner else tasks).count()
    try:
        with transaction.atomic(using=alias):  # a savepoint: another process may create the row at the same moment
            TaskQuota.objects.using(alias).create(scope=scope, owner=owner, count=initial)
    except IntegrityError:
        pass


def _forget(tasks: QuerySet[Task]) -> int:
    """Delete ``tasks`` and take them off the counters of their server and owner. Returns how many."""
    alias = _database()
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


def visible(task_id: Any, owner: str, only: tuple[str, ...] | None = None) -> Task | None:
    """The task if it exists, belongs to ``owner`` and has not expired (an expired one is deleted).

    ``only``: the fields to load besides the primary key and ``expires_at`` (:func:`~.rows.read_plan`).
    """
    pk = parse_id(task_id)
    if pk is None:
        return None
    task = _read(pk, owner, only=only)
    if task is not None and task.is_expired():
        _forget(Task.objects.filter(pk=pk))
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
    with transaction.atomic(using=_database()):
        task = _first(Task.objects.select_for_update().filter(pk=task_id, status__in=ACTIVE))
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
    with transaction.atomic(using=_database()):
        task = _first(Task.objects.select_for_update().filter(pk=pk, owner=owner).live(now))
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
    with transaction.atomic(using=_database()):
        task = _first(Task.objects.select_for_update().filter(pk=task_id, status__in=ACTIVE))
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
    return _first(tasks)


_FINISHED_FIELDS = (*DETAILED_FIELDS, "watched", "tool")
"""What a finished task is published with (``publish`` checks ``watched``), and its ``str()``."""


def finish(
    task_id: Any, status: str, *, result: Any = None, error: Any = None, message: str | None = None
) -> Task | None:
    """Compare-and-set an active task to a terminal status. None if it was already terminal (or gone).

    The task comes back with what its notification needs (the rest deferred): its arguments, answers
    and request metadata, often the biggest columns, are not read back to be dropped.
    """
    return _update_active(task_id, _FINISHED_FIELDS, **_finished(status, result, error, message))


def _finished(status: str, result: Any, error: Any, message: str | None) -> dict[str, Any]:
    """The values :func:`finish` sets."""
    assert status in TERMINAL
    fields: dict[str, Any] = {"status": status, "updated_at": timezone.now()}
    fields.update(result=result, error=error, input_requests={})
    if message is not None:
        fields["status_message"] = message
    return fields


def renew_leases(task_ids: list[str], lease_seconds: float) -> tuple[list[str], list[str], list[str]]:
    """One batched lease renewal for the tasks this process runs.

    Returns the ids flagged for cancellation, those with answers waiting to be
    taken (a fallback for a lost wake-up), and those no longer active (deleted,
    or finished elsewhere).
    """
    mine = Task.objects.filter(pk__in=task_ids).active()
    mine.update(lease_expires_at=timezone.now() + timedelta(seconds=lease_seconds))
    state = {
        str(pk): (cancel, bool(answers))
        for pk, cancel, answers in mine.values_list("pk", "cancel_requested", "input_responses")
    }
    return (
        [t for t, (cancel, _) in state.items() if cancel],
        [t for t, (_, answered) in state.items() if answered],
        [t for t in task_ids if t not in state],
    )


def reap_lapsed(running: Iterable[str], error: dict[str, Any], limit: int = 500) -> list[Task]:
    """Fail active tasks whose lease lapsed (their process died, or never started them): a bounded, batched sweep.

    ``running`` are the tasks the caller runs (and renews). Returns the tasks failed here
    (compare-and-set: each is failed by exactly one sweeper).
    """
    now = timezone.now()
    lapsed = list(
        Task.objects.active()
        .filter(lease_expires_at__lte=now)
        .exclude(pk__in=[pk for pk in (parse_id(t) for t in running) if pk is not None])
        .order_by("lease_expires_at")
        .values_list("pk", flat=True)[:limit]
    )
    reaped = []
    for pk in lapsed:
        moved = Task.objects.filter(pk=pk, status__in=ACTIVE, lease_expires_at__lte=now).update(
            status=TaskStatus.FAILED, error=error, status_message=error["message"], input_requests={}, updated_at=now
        )
        if moved:
            reaped.append(pk)
    return list(Task.objects.using(_database()).filter(pk__in=reaped))  # as written: a replica may lag


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
    return list(Task.objects.using(_database()).filter(pk__in=failed))  # as written: a replica may lag


def set_job(task_id: Any, job_id: str) -> None:
    Task.objects.filter(pk=task_id).update(job_id=job_id[:64])


def forget(task_id: Any) -> int:
    """Delete one task and release its place in the caps (an enqueue that failed)."""
    return _forget(Task.objects.filter(pk=task_id))


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


def lease_lapsed(task: Task) -> bool:
    """Whether the task's lease ran out (checked before asking the database to act on it)."""
    return task.lease_expires_at is not None and task.lease_expires_at <= timezone.now()


def fail_if_owner_gone(task: Task, error: dict[str, Any]) -> Task:
    """Finish an active task whose lease lapsed (its process died or gave up on it); else return it as is.

    The caller checks first that the task does not run in its own process.
    """
    now = timezone.now()
    if task.status not in ACTIVE or not lease_lapsed(task):
        return task
    Task.objects.filter(pk=task.pk, status__in=ACTIVE, lease_expires_at__lte=now).update(
        status=TaskStatus.FAILED, error=error, status_message=error["message"], input_requests={}, updated_at=now
    )
    return _first(Task.objects.using(_database()).filter(pk=task.pk)) or task  # as written: a replica may lag


def sweep_expired(now: datetime | None = None) -> int:
    """Delete expired tasks (sync; for the management command and the admin). Returns how many."""
    return _forget(Task.objects.expired(now or timezone.now()))


SWEEP_BATCH = 500
"""The most expired tasks one creation at a cap, or one maintenance round, deletes."""


def sweep_expired_batch(now: datetime | None = None, scope: str | None = None) -> int:
    """Delete up to :data:`SWEEP_BATCH` expired tasks (of one server, with ``scope``). Returns how many."""
    expired = Task.objects.expired(now or timezone.now())
    if scope is not None:
        expired = expired.filter(scope=scope)
    pks = list(expired.order_by().values_list("pk", flat=True)[:SWEEP_BATCH])
    return _forget(Task.objects.filter(pk__in=pks)) if pks else 0


def recount() -> None:
    """Rebuild the cap counters from the rows (after tasks were deleted outside the store)."""
    alias = _database()
    with transaction.atomic(using=alias):
        TaskQuota.objects.using(alias).all().delete()  # rebuilt, locked, from a count at the next creation


class TaskStore:
    """The store functions as coroutines, each run in this store's own small thread pool."""

    def __init__(self, threads: int) -> None:
        self._executor = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="django-mcp-store")
        self.outage = KnownOutage()
        self.create = self._door(create)
        self._visible_in_pool = self._door(visible, writes=False)  # deletes a task it finds expired: rarely
        self.visible_many = self._door(visible_many, writes=False)
        self.watch_many = self._door(watch_many)
        self.reload = self._door(reload, writes=False)
        self.set_status_message = self._door(set_status_message)
        self.park = self._door(park)
        self.answer = self._door(answer)
        self.take_answers = self._door(take_answers)
        self.request_cancel = self._door(request_cancel)
        self._finish_in_pool = self._door(finish)
        self.renew_leases = self._door(renew_leases)
        self.reap_lapsed = self._door(reap_lapsed)
        self.fail_if_owner_gone = self._door(fail_if_owner_gone)
        self.set_job = self._door(set_job)
        self.forget = self._door(forget)
        self.claim = self._door(claim)
        self.cancel_queued = self._door(cancel_queued)
        self.fail_stale_queued = self._door(fail_stale_queued)
        self.sweep_expired_batch = self._door(sweep_expired_batch)

    async def visible(self, task_id: Any, owner: str, only: tuple[str, ...] | None = None) -> Task | None:
        """:func:`visible`, read from the event loop when it can be (``loop_read``, ``loop_read_pg``)."""
        task = read_visible(task_id, owner, only)  # SQLite: synchronous, a request never waiting is not suspended
        if task is USE_STORE:
            task = await loop_read_pg.read_visible(task_id, owner, only)
        if task is USE_STORE:
            return await self._visible_in_pool(task_id, owner, only)
        return task

    async def finish(
        self, task_id: Any, status: str, *, result: Any = None, error: Any = None, message: str | None = None
    ) -> Task | None:
        """:func:`finish`, from the event loop on PostgreSQL when the loop's connection is free (``loop_read_pg``)."""
        pk = parse_id(task_id)
        if pk is not None:
            values = _finished(status, result, error, message)
            task = await loop_read_pg.update_active(pk, _FINISHED_FIELDS, values)
            if task is not USE_STORE:
                return task
        return await self._finish_in_pool(task_id, status, result=result, error=error, message=message)

    def _door(self, fn: Callable[P, R], *, writes: bool = True) -> Callable[P, Coroutine[Any, Any, R]]:
        # Straight to the pool: these functions need no context variables and no thread-sensitive
        # routing, which sync_to_async would spend more on than a primary-key query costs.
        guarded, executor, outage = _guarded(fn, writes=writes), self._executor, self.outage

        async def door(*args: P.args, **kwargs: P.kwargs) -> R:
            outage.admit()
            try:
                result = await asyncio.get_running_loop().run_in_executor(executor, partial(guarded, *args, **kwargs))
            except (OperationalError, InterfaceError) as exc:
                outage.failed(exc)
                raise
            outage.succeeded()
            return result

        return door

    def close(self) -> None:
        """Stop the threads once their work is done."""
        self._executor.shutdown(wait=False)
