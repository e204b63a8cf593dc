"""``tasks/get``'s read of a SQLite database on the event loop's own thread (a fast path).

On SQLite a read by primary key costs less than the thread hop the store's door puts around it
(several times less than through the threads: ``bench/``), and ``tasks/get`` is the request
clients repeat. So :func:`read_visible` reads the row on the loop, on a connection that never
waits: its busy timeout is 0, it is taken only if no other thread holds it, and a locked database
(a rollback-journal writer), a failing connection, an expired task (whose deletion is a write) or
another backend answer :data:`USE_STORE`: the caller goes through the store's door as before. In
WAL mode, as ``django_mcp.W001`` asks, readers never wait for the writer.

Django's own connection cannot be used here: it refuses to run on a thread with an event loop
(``SynchronousOnlyOperation``), and an event loop gets a new one per request. This connection is
the one Django would open (its parameters, its ``init_command``, its column converters), one per
database per process (threads come and go with ``async_to_sync``), read-only, and never inside a
transaction, so every read sees what is committed, as the store's threads do.
"""

from __future__ import annotations

import atexit
import functools
import sqlite3
import threading
from typing import Any, NamedTuple

from django.db import connections, router
from django.db.backends.sqlite3.base import DatabaseWrapper as SQLiteDatabase

from ...compat import sqlite_init_commands
from ..models import Task
from .database import parse_id
from .prepared import USE_STORE, MaybeTask, read_statement, visible_row


class _Reader(NamedTuple):
    database: SQLiteDatabase  # for its settings and converters: never connected
    name: str  # the file it was opened on (the test runner renames the database)
    link: sqlite3.Connection


_WAIT_CODES = (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
_readers: dict[str, _Reader] = {}
_elsewhere: set[str] = set()  # aliases whose database this module does not read
_lock = threading.Lock()


def read_visible(task_id: Any, owner: str, only: tuple[str, ...] | None = None) -> MaybeTask:
    """The task if it exists, belongs to ``owner`` and has not expired; :data:`USE_STORE` when unsure.

    ``only``: the fields to load besides the primary key and ``expires_at`` (:func:`~.prepared.read_plan`).
    """
    pk = parse_id(task_id)
    if pk is None:
        return None
    alias = router.db_for_read(Task)
    if alias in _elsewhere or not _lock.acquire(blocking=False):  # another thread's loop reads: never wait
        return USE_STORE
    try:
        reader = _reader(alias)
        if reader is None:
            return USE_STORE
        plan, params = read_statement(reader.database, pk, owner, only)
        try:
            found = reader.link.execute(_qmark(plan.sql), params).fetchone()
        except sqlite3.Error as exc:
            if getattr(exc, "sqlite_errorcode", 0) & 0xFF not in _WAIT_CODES:
                _drop(alias)  # failing, not busy: open it again next time
            return USE_STORE  # the store's threads know how to wait and retry
    finally:
        _lock.release()
    return visible_row(reader.database, plan, found)


@functools.cache
def _qmark(sql: str) -> str:
    return sql.replace("%s", "?")  # the plan's placeholders are Django's; its names hold no "%"


def _reader(alias: str) -> _Reader | None:
    """The read connection to ``alias``, opened as Django opens its own; None if it cannot be."""
    reader = _readers.get(alias)
    if reader is not None and reader.database.settings_dict["NAME"] == reader.name:
        return reader
    _drop(alias)
    database = connections.create_connection(alias)
    if type(database) is not SQLiteDatabase:  # another database, or a subclass opening its connections its own way
        _elsewhere.add(alias)
        return None
    params = database.get_connection_params()  # also reads OPTIONS' init_command into init_commands
    params["timeout"] = 0  # never wait on the event loop: a locked database goes to the store
    params["isolation_level"] = None  # autocommit: each read sees the latest commit
    try:
        link: sqlite3.Connection = sqlite3.connect(**params)
    except sqlite3.Error:
        return None
    try:
        for statement in sqlite_init_commands(database):  # set by get_connection_params
            if statement := statement.strip():
                link.execute(statement)
        link.execute("PRAGMA query_only = ON")
    except sqlite3.Error:
        link.close()
        return None
    reader = _readers[alias] = _Reader(database, params["database"], link)
    return reader


def _drop(alias: str) -> None:
    reader = _readers.pop(alias, None)
    if reader is not None:
        reader.link.close()


@atexit.register
def _close() -> None:
    for alias in list(_readers):
        _drop(alias)
