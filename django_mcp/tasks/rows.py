"""The task row's SQL, built once per database from the model, and its loading as the ORM loads it.

Compiling a queryset costs several times the query itself on the hottest paths (``tasks/get``,
every task's end), so the store reads and updates a task by primary key with these plans.
"""

from __future__ import annotations

import uuid
from typing import Any, NamedTuple

from django.db.backends.base.base import BaseDatabaseWrapper

from .models import Task


def parse_id(task_id: Any) -> uuid.UUID | None:
    """The task id as a UUID, or None if it cannot be one (no task has it)."""
    try:
        return uuid.UUID(str(task_id))
    except ValueError:
        return None


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
