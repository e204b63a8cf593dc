"""``tasks/get``'s read of a PostgreSQL database on the event loop, over psycopg's async connection.

Through the store's door a read by primary key costs a thread hop each way and a pooled
connection's checkout around the query's round trip: ~300 µs on the bench machine, against ~70 µs
for the round trip alone. So :func:`read_visible` sends the query from the loop itself, on a
connection of its own, and on SQLite's rules (``loop_read``): used by one request at a time (a
request that finds it busy does not wait), in autocommit (each read sees the latest commit), and a
busy or failing connection, an expired task (whose deletion is a write) or another backend answer
:data:`~.loop_read.USE_STORE`: the caller goes through the store's door as before. It only ever
sends the task's ``SELECT``; it sets nothing on its session that Django would not (a session
setting would outlive it on a PgBouncer server connection shared in transaction mode).

The connection is the one Django would open (its parameters, type adapters, time zone and column
converters), one per database per event loop; needs psycopg 3. A database with ``assume_role``, or a
project with ``connection_created`` receivers (``django.contrib.postgres`` has one), is left to the
store: they set up Django's own connections, which this one would bypass. No request waits for it to
open: the first read on a loop goes through the store and opens it in the background, and after a
failure to open the next attempt waits :data:`RETRY_SECONDS` (a database that is down costs a
request nothing more than the store's own timeout). The connection belongs to its loop and is closed
with it: when the loop shuts down its async generators (``asyncio.run``, uvicorn, asgiref's
``async_to_sync``, pytest-asyncio), when the next loop reads after it was closed without doing so,
or at exit. A test database can then be dropped after the tests.
"""

from __future__ import annotations

import asyncio
import atexit
import time
from collections.abc import AsyncIterator
from typing import Any, Literal

from django.db import connections, router
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.backends.signals import connection_created

from .loop_read import USE_STORE, _Answer
from .models import Task
from .rows import load_row, parse_id, read_plan


class _Reader:
    """A database's read connection on one loop; ``link`` is None while it opens."""

    __slots__ = ("busy", "database", "error", "link", "name")

    def __init__(self, database: BaseDatabaseWrapper, error: type[Exception]) -> None:
        self.database = database  # for its settings and converters: never connected
        self.error = error  # psycopg.Error (psycopg is an optional dependency)
        self.name = database.settings_dict["NAME"]  # the test runner renames the database
        self.link: Any = None  # psycopg.AsyncConnection (psycopg is an optional dependency)
        self.busy = True

    def close(self) -> None:
        if self.link is not None:
            self.link.pgconn.finish()  # what AsyncConnection.close() does, without a loop to await on


class _LoopReaders:
    """One loop's readers, closed with the loop (see the module's docstring)."""

    def __init__(self) -> None:
        self.readers: dict[str, _Reader] = {}
        self.opening: set[asyncio.Task[None]] = set()
        self.retry_at: dict[str, float] = {}
        self.keeper: AsyncIterator[None] | None = None

    def drop(self, alias: str) -> None:
        reader = self.readers.pop(alias, None)
        if reader is not None:
            reader.close()

    def close(self) -> None:
        for alias in list(self.readers):
            self.drop(alias)


RETRY_SECONDS = 1.0
"""How long after a failure to open a read connection the next attempt waits."""

# Not weakly keyed: a loop's async generators hold its finalizer hook, so the keeper keeps it alive.
_loops: dict[asyncio.AbstractEventLoop, _LoopReaders] = {}
_elsewhere: set[str] = set()  # aliases whose database this module does not read


async def read_visible(
    task_id: Any, owner: str, only: tuple[str, ...] | None = None
) -> Task | None | Literal[_Answer.USE_STORE]:
    """The task if it exists, belongs to ``owner`` and has not expired; :data:`USE_STORE` when unsure.

    ``only``: the fields to load besides the primary key and ``expires_at`` (:func:`~.rows.read_plan`).
    """
    pk = parse_id(task_id)
    if pk is None:
        return None
    alias = router.db_for_read(Task)
    if alias in _elsewhere:
        return USE_STORE
    loop = asyncio.get_running_loop()
    loop_readers = _loops.get(loop)
    reader = None
    if loop_readers is not None:
        reader = loop_readers.readers.get(alias)
        if reader is not None and reader.database.settings_dict["NAME"] != reader.name:
            loop_readers.drop(alias)
            reader = None
    if reader is None:
        if loop_readers is None or time.monotonic() >= loop_readers.retry_at.get(alias, 0.0):
            database = _readable(alias)
            if database is not None:
                _open_soon(await _readers_of(loop), alias, database)
        return USE_STORE
    assert loop_readers is not None  # the reader is one of them
    if reader.busy:  # another request of this loop is reading (or it is opening): never wait
        return USE_STORE
    plan = read_plan(reader.database, True, only)
    params = (Task._meta.pk.get_db_prep_value(pk, reader.database), owner)
    reader.busy = True
    try:
        found = await (await reader.link.execute(plan.sql, params)).fetchone()
    except reader.error:
        loop_readers.drop(alias)  # failing: opened again by the next read; the store's threads retry
        return USE_STORE
    except BaseException:
        loop_readers.drop(alias)  # cancelled mid-query: the connection's state is unknown
        raise
    finally:
        reader.busy = False
    if found is None:
        return None
    task = load_row(reader.database, plan, found)
    if task.is_expired():
        return USE_STORE  # the store deletes it: a write
    return task


async def _readers_of(loop: asyncio.AbstractEventLoop) -> _LoopReaders:
    loop_readers = _loops.get(loop)
    if loop_readers is None:
        for other, others in list(_loops.items()):
            if other.is_closed():  # closed without shutting down its async generators
                others.close()
                del _loops[other]
        loop_readers = _loops[loop] = _LoopReaders()
        loop_readers.keeper = _keeper(loop, loop_readers)
        await anext(loop_readers.keeper)  # now the loop's: loop.shutdown_asyncgens() closes it
    return loop_readers


async def _keeper(loop: asyncio.AbstractEventLoop, loop_readers: _LoopReaders) -> AsyncIterator[None]:
    try:
        yield
    finally:
        loop_readers.close()
        if _loops.get(loop) is loop_readers:
            del _loops[loop]


@atexit.register
def _close() -> None:
    for loop_readers in list(_loops.values()):
        loop_readers.close()


def _readable(alias: str) -> BaseDatabaseWrapper | None:
    """A wrapper of ``alias`` as Django makes it (never connected), if this module reads its database."""
    database = connections.create_connection(alias)
    if database.vendor != "postgresql" or database.settings_dict["OPTIONS"].get("assume_role"):
        _elsewhere.add(alias)
        return None
    from django.db.backends.postgresql.base import DatabaseWrapper as PostgresDatabase
    from django.db.backends.postgresql.psycopg_any import is_psycopg3

    if type(database) is not PostgresDatabase or not is_psycopg3:  # a subclass, or psycopg2
        _elsewhere.add(alias)
        return None
    if connection_created.has_listeners(PostgresDatabase):  # they set up Django's connections, not this one
        _elsewhere.add(alias)
        return None
    return database


def _open_soon(loop_readers: _LoopReaders, alias: str, database: BaseDatabaseWrapper) -> None:
    """Start opening the read connection to ``alias`` in the background (reads go to the store meanwhile)."""
    import psycopg

    reader = loop_readers.readers[alias] = _Reader(database, psycopg.Error)  # busy while it opens
    opening = asyncio.get_running_loop().create_task(_open(loop_readers, alias, reader))
    loop_readers.opening.add(opening)
    opening.add_done_callback(loop_readers.opening.discard)


async def _open(loop_readers: _LoopReaders, alias: str, reader: _Reader) -> None:
    """Connect ``reader`` as Django connects its own; drop it if it cannot be."""
    import psycopg

    database = reader.database
    try:
        params = database.get_connection_params()
        # Django's cursor binds parameters on the client unless OPTIONS ask for the server's.
        client_side = issubclass(params.pop("cursor_factory"), psycopg.ClientCursor)
        reader.link = await psycopg.AsyncConnection.connect(
            **params,
            autocommit=True,
            cursor_factory=psycopg.AsyncClientCursor if client_side else psycopg.AsyncCursor,
        )
        timezone_name = database.timezone_name  # set as on Django's own connection
        if timezone_name and reader.link.info.parameter_status("TimeZone") != timezone_name:
            await reader.link.execute(database.ops.set_time_zone_sql(), [timezone_name])
    except Exception as exc:  # unreachable, refused, misconfigured: the store's door answers (and words it)
        reader.close()
        _forget(loop_readers, alias, reader)
        if isinstance(exc, psycopg.InterfaceError):  # this loop cannot run it (Windows' proactor loop)
            _elsewhere.add(alias)
        loop_readers.retry_at[alias] = time.monotonic() + RETRY_SECONDS
        return
    except BaseException:  # cancelled: its loop is ending
        reader.close()
        _forget(loop_readers, alias, reader)
        raise
    if loop_readers.readers.get(alias) is not reader:  # dropped while it opened (its database renamed)
        reader.close()
        return
    reader.busy = False


def _forget(loop_readers: _LoopReaders, alias: str, reader: _Reader) -> None:
    if loop_readers.readers.get(alias) is reader:
        del loop_readers.readers[alias]
