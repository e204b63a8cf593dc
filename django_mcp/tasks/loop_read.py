"""``tasks/get``'s read of a SQLite database on the event loop's own thread.

On SQLite a read by primary key costs less than the thread hop the store's door puts around it
(on the bench machine ~100 µs against ~400 µs through the pool, ``bench/inproc.py``), and
``tasks/get`` is the request clients repeat. So :func:`read_visible` reads the row here, on a
connection of the loop thread's own that never waits: its busy timeout is 0, and a database that
is locked (a rollback-journal writer), a missing file, an expired task (whose deletion is a write)
or any other surprise answer :data:`USE_STORE`, and the caller goes through the store's door as
before. In WAL mode, as ``django_mcp.W001`` asks, readers never wait for the writer.

Django's own connection cannot be used here: it refuses to run on a thread with an event loop
(``SynchronousOnlyOperation``). The connection is the one Django would open (its parameters, its
``init_command``, its column converters), read-only, and never inside a transaction, so every read
sees what is committed, as the store's threads do.
"""

from __future__ import annotations

import functools
import sqlite3
import threading
from enum import Enum
from typing import Any, Final, Literal

from django.db import connections, router
from django.db.backends.sqlite3.base import DatabaseWrapper as SQLiteDatabase
from django.utils import timezone

from .models import Task
from .rows import load_row, parse_id, read_plan


class _Answer(Enum):
    USE_STORE = "use the store"


USE_STORE: Final = _Answer.USE_STORE
"""What :func:`read_visible` answers when the read has to go through the store's door."""

_WAIT_CODES = (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
_local = threading.local()
_elsewhere: set[str] = set()  # aliases whose database this module does not read


def read_visible(task_id: Any, owner: str) -> Task | None | Literal[_Answer.USE_STORE]:
    """The task if it exists, belongs to ``owner`` and has not expired; :data:`USE_STORE` when unsure."""
    pk = parse_id(task_id)
    if pk is None:
        return None
    try:
        database, link = _reader(router.db_for_read(Task))
    except _NotHere:
        return USE_STORE
    plan = read_plan(database, True)
    try:
        cursor = link.execute(_qmark(plan.sql), (Task._meta.pk.get_db_prep_value(pk, database), owner))
        found = cursor.fetchone()
    except sqlite3.Error as exc:
        if getattr(exc, "sqlite_errorcode", 0) & 0xFF not in _WAIT_CODES:
            _drop(database.alias)  # gone or broken: open it again next time
        return USE_STORE  # the store's threads know how to wait and retry
    if found is None:
        return None
    task = load_row(database, plan, found)
    if task.expires_at is not None and task.expires_at <= timezone.now():
        return USE_STORE  # the store deletes it: a write, which waits for the lock
    return task


class _NotHere(Exception):
    pass


@functools.cache
def _qmark(sql: str) -> str:
    return sql.replace("%s", "?")  # the plan's placeholders are Django's; its names hold no "%"


def _reader(alias: str) -> tuple[SQLiteDatabase, sqlite3.Connection]:
    """This thread's Django wrapper (settings, converters; never connected) and read connection for ``alias``.

    Not ``connections[alias]``: on a thread with an event loop that is a new wrapper per request.
    """
    links = _links()
    opened = links.get(alias)
    if opened is not None and opened[0].settings_dict["NAME"] == opened[1]:  # the test runner renames it
        return opened[0], opened[2]
    if alias in _elsewhere:
        raise _NotHere
    _drop(alias)
    database = connections.create_connection(alias)
    if type(database) is not SQLiteDatabase:  # another database, or a subclass opening its connections its own way
        _elsewhere.add(alias)
        raise _NotHere
    params = database.get_connection_params()  # also reads OPTIONS' init_command into init_commands
    params["timeout"] = 0  # never wait on the event loop: a locked database goes to the store
    params["isolation_level"] = None  # autocommit: each read sees the latest commit
    try:
        link: sqlite3.Connection = sqlite3.connect(**params)
    except sqlite3.Error:
        raise _NotHere from None
    try:
        for statement in getattr(database, "init_commands", ()):  # set by get_connection_params
            if statement := statement.strip():
                link.execute(statement)
        link.execute("PRAGMA query_only = ON")
    except sqlite3.Error:
        link.close()
        raise _NotHere from None
    _links()[alias] = (database, params["database"], link)
    return database, link


def _links() -> dict[str, tuple[SQLiteDatabase, str, sqlite3.Connection]]:
    links: dict[str, tuple[SQLiteDatabase, str, sqlite3.Connection]] | None = getattr(_local, "links", None)
    if links is None:
        links = _local.links = {}
    return links


def _drop(alias: str) -> None:
    opened = _links().pop(alias, None)
    if opened is not None:
        opened[2].close()
