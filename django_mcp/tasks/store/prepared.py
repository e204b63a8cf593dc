"""The fast path's SQL: a task's row read, updated and inserted by prepared statements, loaded as the ORM loads it.

Compiling a queryset costs several times the query itself on the hottest paths (``tasks/get``,
every task's creation and end), so with ``TASK_FAST_PATHS`` the store runs these plans, built
once per database from the model. The plain ORM (``operations``) is the reference they match.
"""

from __future__ import annotations

from enum import Enum
from typing import Any, Final, Literal, NamedTuple

from django.db import connections
from django.db.backends.base.base import BaseDatabaseWrapper

from ..models import ACTIVE, Task, TaskQuota


class Answer(Enum):
    USE_STORE = "use the store"


USE_STORE: Final = Answer.USE_STORE
"""What a read or write on the event loop answers when it has to go through the store's threads."""

MaybeTask = Task | None | Literal[Answer.USE_STORE]


class ReadPlan(NamedTuple):
    """A task's ``SELECT`` by primary key, its column list, and the converters of the columns that have any."""

    sql: str
    columns: str
    names: list[str]
    converters: list[tuple[int, list[Any], Any]]


_READ_PLANS: dict[tuple[str, bool, tuple[str, ...] | None], ReadPlan] = {}


def read_plan(conn: BaseDatabaseWrapper, by_owner: bool, only: tuple[str, ...] | None = None) -> ReadPlan:
    """``SELECT <columns> FROM task WHERE id = %s [AND owner = %s]`` and the column converters, from the model.

    Every column, or the primary key, ``expires_at`` (every reader checks it) and the fields named in
    ``only``: the others load deferred, as with ``QuerySet.only`` (read one, and the ORM queries for it).
    """
    plan = _READ_PLANS.get((conn.alias, by_owner, only))
    if plan is None:
        qn, table = conn.ops.quote_name, Task._meta.db_table
        for name in only or ():
            Task._meta.get_field(name)  # FieldDoesNotExist: a misspelt name would load deferred, one query each
        wanted = None if only is None else {*only, "expires_at"}
        fields = [f for f in Task._meta.concrete_fields if wanted is None or f.primary_key or f.name in wanted]
        columns = [field.get_col(table) for field in fields]

        def column(field: Any) -> str:
            return f"{qn(table)}.{qn(str(field.column))}"

        where = f"{column(Task._meta.pk)} = %s" + (
            f" AND {column(Task._meta.get_field('owner'))} = %s" if by_owner else ""
        )
        select = ", ".join(column(field) for field in fields)
        converters = [
            (i, conn.ops.get_db_converters(col) + col.get_db_converters(conn), col) for i, col in enumerate(columns)
        ]
        plan = ReadPlan(
            f"SELECT {select} FROM {qn(table)} WHERE {where}",  # noqa: S608 - names from the model, values as params
            select,
            [field.attname for field in fields],
            [c for c in converters if c[1]],
        )
        _READ_PLANS[(conn.alias, by_owner, only)] = plan
    return plan


def load_row(conn: BaseDatabaseWrapper, plan: ReadPlan, row: Any) -> Task:
    """``row`` (selected by ``plan`` from ``conn``) as the model instance the ORM would make of it."""
    values = list(row)
    for i, converters, col in plan.converters:
        for convert in converters:
            values[i] = convert(values[i], col, conn)
    return Task.from_db(conn.alias, plan.names, values)


def read_statement(
    conn: BaseDatabaseWrapper, pk: Any, owner: str | None, only: tuple[str, ...] | None
) -> tuple[ReadPlan, tuple[Any, ...]]:
    """The plan and parameters reading one task by primary key (and owner): the same for every read path.

    Raises ``FieldDoesNotExist`` for a misspelt name in ``only``.
    """
    plan = read_plan(conn, owner is not None, only)
    return plan, (Task._meta.pk.get_db_prep_value(pk, conn), *(() if owner is None else (owner,)))


def read(conn: BaseDatabaseWrapper, pk: Any, owner: str | None, only: tuple[str, ...] | None) -> Task | None:
    """One task by primary key (and owner) on ``conn``, as the ORM would load it."""
    plan, params = read_statement(conn, pk, owner, only)
    with conn.cursor() as cursor:
        cursor.execute(plan.sql, params)
        row = cursor.fetchone()
    return None if row is None else load_row(conn, plan, row)


def visible_row(database: BaseDatabaseWrapper, plan: ReadPlan, found: Any) -> MaybeTask:
    """The task a read on the loop ``found`` (a row of ``plan``, or None), or :data:`USE_STORE` if it expired."""
    if found is None:
        return None
    task = load_row(database, plan, found)
    if task.is_expired():
        return USE_STORE  # the store deletes it: a write
    return task


_UPDATE_PLANS: dict[tuple[str, tuple[str, ...], tuple[str, ...] | None], tuple[str, list[Any]]] = {}


def update_returns_rows(conn: Any) -> bool:
    """Whether ``UPDATE … RETURNING`` works here: PostgreSQL, and SQLite from 3.35 (as INSERT's does)."""
    return conn.vendor in ("postgresql", "sqlite") and bool(conn.features.can_return_columns_from_insert)


def update_plan(
    conn: BaseDatabaseWrapper, names: tuple[str, ...], returning: tuple[str, ...] | None
) -> tuple[str, list[Any], ReadPlan]:
    """``update_active``'s SQL setting ``names``, the fields of its parameters and its ``RETURNING``'s plan.

    Built once per database from the model (also for the compare-and-set from the loop, ``loop_postgres``).
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


def update_active(
    conn: BaseDatabaseWrapper, pk: Any, returning: tuple[str, ...] | None, values: dict[str, Any]
) -> Task | None:
    """``UPDATE task SET … WHERE id = %s AND status IN (active) RETURNING …``: the moved task, or None.

    A compare-and-set on the task's status and the re-read of its row in one statement (one round
    trip). Only where :func:`update_returns_rows`.
    """
    sql, fields, returned = update_plan(conn, tuple(values), returning)
    params = [field.get_db_prep_save(values[field.name], conn) for field in fields]
    params += [Task._meta.pk.get_db_prep_value(pk, conn), *(status.value for status in ACTIVE)]
    with conn.cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    return None if row is None else load_row(conn, returned, row)


_INSERT_PLANS: dict[str, str] = {}


def insert(row: Task, alias: str) -> None:
    """``INSERT`` every column of a new task, the SQL built once per database from the model.

    What ``save(force_insert=True)`` does, less the statement's compilation (most of a creation's
    own cost) and the ``pre_save``/``post_save`` signals (as for the store's ``update()`` calls).
    """
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


def increment(alias: str, scope: str, owner: str, limit: int, *, commit_lazily: bool = False) -> bool:
    """``UPDATE quota SET count = count + 1 WHERE scope, owner AND count < limit``; whether a row moved.

    Formatted from the model's names rather than compiled by the ORM (it runs on every creation).
    ``commit_lazily`` (PostgreSQL, autocommit): the statement's own commit does not wait for its
    WAL flush, as ``SET LOCAL synchronous_commit TO OFF`` would have it in a transaction.
    """
    conn = connections[alias]
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
