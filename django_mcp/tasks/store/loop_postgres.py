"""``tasks/get``'s read of a PostgreSQL database (and a task's end) on the event loop, over psycopg's async connection.

Through the store's threads a read by primary key costs a thread hop each way and a pooled connection's
checkout around the query's round trip, several times the round trip alone. So :func:`aread_visible`
sends the query from the loop itself, on a connection of its own, and on SQLite's rules
(``loop_sqlite``): each connection used by one request at a time, in autocommit (each read sees the
latest commit), and failing connections, an expired task (whose deletion is a write) or another backend
answer :data:`~.prepared.USE_STORE`: the caller goes through the store's threads as before. A read that
finds every connection busy with a statement waits, up to :data:`WAIT_SECONDS`, for one to be handed
over as its statement ends (about a round trip: less than the store's two thread hops and pool
checkout), then goes to the store. Under overload the reads at the back of the queue wait that long
first; and a task's final write, which never waits, goes to the store more often while reads queue.
Besides the task's ``SELECT`` it sends only the time zone Django also sets on its own connections:
nothing on its session outlives it on a PgBouncer server connection shared in transaction mode.

A connection unused for :data:`IDLE_SECONDS` is closed at the next read or final write of its loop
(the network may have dropped it silently; that one goes to another free connection, or to the store),
so the connections a burst opened stay open until then.

A task's final compare-and-set (``TaskStore.afinish``, the runner's last write) goes the same way when the
connection is free, through :func:`aupdate_active`: the task's end is then written, and reaches its own
worker's listen streams, without a thread's wake-up and a pool checkout (a busy or failing connection
leaves it to the store, whose compare-and-set finds a task this one did end no longer active).

The connection is the one Django would open (its parameters, type adapters, time zone and column
converters), up to ``TASK_LOOP_CONNECTIONS`` per database per event loop: a further one opens, in the
background, while every one is in use (at c=16 a single connection left most reads to the store; four
served more; ``bench/`` has the figures). Needs psycopg 3. A database with ``assume_role``, or a
project with ``connection_created`` receivers (``django.contrib.postgres`` has one), is left to the
store: they set up Django's own connections, which this one would bypass.

No request waits for one to open: a loop's second read opens the first in the background (a loop
made for one call, as ``async_to_sync`` makes under WSGI, never does), reads go through the store meanwhile,
and after a failure to open the next attempt waits :data:`RETRY_SECONDS`, twice as long after each
further failure (up to a minute). The connection belongs to its loop and is closed with it: when the
loop shuts down its async generators (``asyncio.run``, uvicorn, asgiref's ``async_to_sync``,
pytest-asyncio), when the next loop reads after it was closed without doing so, or at exit. A test
database can then be dropped after the tests. A read in flight keeps its connection until it ends.
"""

from __future__ import annotations

import asyncio
import atexit
import logging
import time
from collections import deque
from collections.abc import AsyncGenerator
from typing import Any

from django.db import connections, router
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.backends.signals import connection_created

from ...server.notify import throttle
from ..conf import get_tasks_settings
from ..models import ACTIVE, Task
from .database import parse_id
from .prepared import USE_STORE, MaybeTask, load_row, read_statement, update_plan, visible_row

logger = logging.getLogger("django_mcp.tasks")

RETRY_SECONDS = 1.0
"""How long after a first failure to open a read connection the next attempt waits (doubling, up to 60 s)."""

WAIT_SECONDS = 0.02
"""How long a read waits for a connection in use to be handed over before it goes to the store instead
(a statement stuck on a dropped network must not hold up the reads queued behind it)."""

IDLE_SECONDS = 30.0
"""A connection left unused this long is replaced rather than used: a firewall or load balancer may have
dropped it without a word, and a statement on it would wait for the kernel to give up on the socket."""


class _Reader:
    """A database's connection on one loop: ``opening`` until connected; ``busy`` while opening, used or handed over."""

    __slots__ = ("busy", "cursor", "database", "link", "name", "opening", "used_at")

    def __init__(self, database: BaseDatabaseWrapper) -> None:
        self.database = database  # for its settings and converters: never connected
        self.name = database.settings_dict["NAME"]  # the test runner renames the database
        self.link: Any = None  # psycopg.AsyncConnection (psycopg is an optional dependency)
        self.cursor: Any = None  # the link's one cursor: one per statement costs CPU (bench/)
        self.busy = self.opening = True
        self.used_at = time.monotonic()

    def close(self) -> None:
        if self.link is not None:
            self.link.pgconn.finish()  # what AsyncConnection.close() does, without a loop to await on


class _LoopReaders:
    """One loop's readers, closed with the loop (see the module's docstring)."""

    def __init__(self) -> None:
        self.readers: dict[str, list[_Reader]] = {}
        self.reads = 0  # before the first connection opens: a loop made for one call never opens one
        self.opening: set[asyncio.Task[None]] = set()
        self.failures: dict[str, int] = {}
        self.retry_at: dict[str, float] = {}
        self.waiting: dict[str, deque[asyncio.Future[_Reader | None]]] = {}
        self.closer: AsyncGenerator[None, None] | None = None

    def forget(self, alias: str, reader: _Reader) -> None:
        """Stop handing ``reader`` out and close it, unless it is in use: its user closes it when done."""
        readers = self.readers.get(alias, [])
        if reader in readers:
            readers.remove(reader)
            if not readers:
                del self.readers[alias]
        if not reader.busy:
            reader.close()

    def holds(self, alias: str, reader: _Reader) -> bool:
        """Whether ``reader`` is still handed out (not forgotten)."""
        return reader in self.readers.get(alias, ())

    def release(self, alias: str, reader: _Reader) -> None:
        """``reader``'s statement ended: hand it to the first read still waiting, else mark it free."""
        reader.used_at = time.monotonic()
        if not self.holds(alias, reader):  # forgotten meanwhile (broken, cancelled mid-statement, its loop shut down)
            reader.busy = False
            reader.close()
            return
        waiting = self.waiting.get(alias)
        while waiting:
            waiter = waiting.popleft()
            if not waiter.done():  # (not timed out, not cancelled)
                waiter.set_result(reader)  # still busy: now the waiter's
                return
        reader.busy = False

    def close(self) -> None:
        for alias, readers in list(self.readers.items()):
            for reader in list(readers):
                self.forget(alias, reader)


# Not weakly keyed: a loop's async generators hold its finalizer hook, so the closer keeps it alive.
_loops: dict[asyncio.AbstractEventLoop, _LoopReaders] = {}
_elsewhere: set[str] = set()  # aliases whose database this module does not read


async def aread_visible(task_id: Any, owner: str, only: tuple[str, ...] | None = None) -> MaybeTask:
    """The task if it exists, belongs to ``owner`` and has not expired; :data:`USE_STORE` when unsure.

    ``only``: the fields to load besides the primary key and ``expires_at`` (:func:`~.rows.read_plan`).
    """
    pk = parse_id(task_id)
    if pk is None:
        return None
    taken = await _atake(router.db_for_read(Task), wait=True)
    if taken is None:
        return USE_STORE
    database = taken[2].database
    try:
        plan, params = read_statement(database, pk, owner, only)
    except BaseException:
        taken[0].release(taken[1], taken[2])  # taken, perhaps handed over: never left busy
        raise
    found = await _aexecute(*taken, plan.sql, params)
    return found if found is USE_STORE else visible_row(database, plan, found)


async def aupdate_active(pk: Any, returning: tuple[str, ...] | None, values: dict[str, Any]) -> MaybeTask:
    """The store's compare-and-set of an active task (``store._update_active``) sent from the loop.

    Autocommit: the statement's own commit (durable, as the store's) ends it. :data:`USE_STORE` when the
    connection is busy, opening or failing: the caller runs it in the store, where a statement that did
    commit before its connection failed finds the task no longer active (None), as a retry there would.
    """
    taken = await _atake(router.db_for_write(Task))
    if taken is None:
        return USE_STORE
    database = taken[2].database
    sql, fields, plan = update_plan(database, tuple(values), returning)
    params = [field.get_db_prep_save(values[field.name], database) for field in fields]
    params += [Task._meta.pk.get_db_prep_value(pk, database), *(status.value for status in ACTIVE)]
    # Shielded: a supervisor cancelled meanwhile (its loop ending) leaves the statement to finish, as a
    # store thread would; the task's outcome is then recorded, only not published. The shield runs it
    # as a task of its own, from the next turn of the loop: taken now, so no request is handed it meanwhile.
    taken[2].busy = True
    found = await asyncio.shield(_aexecute(*taken, sql, params))
    if found is USE_STORE or found is None:
        return found
    return load_row(database, plan, found)


async def _atake(alias: str, *, wait: bool = False) -> tuple[_LoopReaders, str, _Reader] | None:
    """One of this loop's connections to ``alias``, now the caller's (busy); or None: to the store.

    None when no connection is open yet (or every one failed), or when all are in use and ``wait`` is
    false. When every connection is in use, none is opening and there are fewer than
    ``TASK_LOOP_CONNECTIONS``, another opens in the background. With ``wait``, while a connection is busy
    with a statement, the first to come free (the one opening included) is handed over if that happens
    within :data:`WAIT_SECONDS`, else None. A read never waits when the only connections are opening.
    """
    limit = get_tasks_settings().TASK_LOOP_CONNECTIONS
    if alias in _elsewhere or not limit:
        return None
    loop = asyncio.get_running_loop()
    loop_readers = _loops.get(loop)
    readers = () if loop_readers is None else loop_readers.readers.get(alias, ())
    now = time.monotonic()
    free, kept = None, 0
    for reader in tuple(readers):
        if reader.busy:  # another request of this loop is using it (or it is opening)
            kept += 1
            continue
        assert loop_readers is not None  # the reader is one of them
        if reader.database.settings_dict["NAME"] != reader.name or now - reader.used_at > IDLE_SECONDS:
            loop_readers.forget(alias, reader)  # renamed, or idle too long (also one a burst left): closed
        elif kept >= limit:
            loop_readers.forget(alias, reader)  # the setting was lowered
        else:
            kept += 1
            if free is None:
                free = reader
    if free is not None:
        assert loop_readers is not None
        return loop_readers, alias, free
    opening = any(reader.opening for reader in readers)  # one at a time
    if not opening and len(readers) < limit and (loop_readers is None or now >= loop_readers.retry_at.get(alias, 0.0)):
        database = _readable(alias)
        if database is not None:
            _open_soon(loop, loop_readers or await _anew_loop_readers(loop), alias, database)
    if not wait or loop_readers is None:
        return None
    if not any(reader.busy and not reader.opening for reader in loop_readers.readers.get(alias, ())):
        return None  # no statement in flight to end soon: no request waits for a connection to open
    handed = await _ahanded_over(loop, loop_readers, alias)
    return None if handed is None else (loop_readers, alias, handed)


async def _ahanded_over(loop: asyncio.AbstractEventLoop, loop_readers: _LoopReaders, alias: str) -> _Reader | None:
    """The connection :meth:`_LoopReaders.release` hands this read within :data:`WAIT_SECONDS`, or None."""
    waiter: asyncio.Future[_Reader | None] = loop.create_future()
    waiting = loop_readers.waiting.setdefault(alias, deque())
    waiting.append(waiter)
    timer = loop.call_later(WAIT_SECONDS, _give_up, waiter)
    try:
        return await waiter
    except BaseException:
        # Cancelled (the request ended), perhaps after a connection was handed over: pass it on.
        handed = waiter.result() if waiter.done() and not waiter.cancelled() else None
        if handed is not None:
            loop_readers.release(alias, handed)
        raise
    finally:
        timer.cancel()
        if waiter in waiting:
            waiting.remove(waiter)


def _give_up(waiter: asyncio.Future[_Reader | None]) -> None:
    if not waiter.done():
        waiter.set_result(None)  # to the store


async def _aexecute(loop_readers: _LoopReaders, alias: str, reader: _Reader, sql: str, params: Any) -> Any:
    """The one row ``sql`` answers (or None), or :data:`USE_STORE` if the connection failed."""
    reader.busy = True
    try:
        await reader.cursor.execute(sql, params)
        return await reader.cursor.fetchone()
    except reader.database.Database.Error:  # type: ignore[attr-defined]  # the wrapper's psycopg
        if reader.link.broken or reader.link.closed:
            loop_readers.forget(alias, reader)  # failing: opened again by a later use; the store's threads retry
        return USE_STORE  # (a statement the server refused: the store's threads raise it as Django words it)
    except BaseException:
        # Cancelled mid-query (psycopg has cancelled it on the server): a new connection is the known state.
        loop_readers.forget(alias, reader)
        raise
    finally:
        loop_readers.release(alias, reader)


async def _anew_loop_readers(loop: asyncio.AbstractEventLoop) -> _LoopReaders:
    for other in list(_loops):
        if other.is_closed():  # closed without shutting down its async generators
            others = _loops.pop(other, None)
            if others is not None:
                others.close()
    loop_readers = _loops[loop] = _LoopReaders()
    loop_readers.closer = _aclosed_with_loop(loop, loop_readers)
    await anext(loop_readers.closer)  # now the loop's: loop.shutdown_asyncgens() closes it
    return loop_readers


def _open_soon(
    loop: asyncio.AbstractEventLoop, loop_readers: _LoopReaders, alias: str, database: BaseDatabaseWrapper
) -> None:
    """From a loop's second read on, start opening a read connection to ``alias`` in the background."""
    loop_readers.reads += 1
    if loop_readers.reads < 2:
        return
    reader = _Reader(database)  # busy while it opens
    loop_readers.readers.setdefault(alias, []).append(reader)
    opening = loop.create_task(_aopen(loop_readers, alias, reader))
    loop_readers.opening.add(opening)
    opening.add_done_callback(loop_readers.opening.discard)


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


async def _aopen(loop_readers: _LoopReaders, alias: str, reader: _Reader) -> None:
    """Connect ``reader`` as Django connects its own; forget it if it cannot be."""
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
        reader.cursor = reader.link.cursor()
    except Exception as exc:  # unreachable, refused, misconfigured: the store's door answers (and words it)
        reader.busy = reader.opening = False
        loop_readers.forget(alias, reader)
        if isinstance(exc, psycopg.InterfaceError):  # this loop cannot run it (Windows' proactor loop)
            _elsewhere.add(alias)
        failures = loop_readers.failures[alias] = loop_readers.failures.get(alias, 0) + 1
        loop_readers.retry_at[alias] = time.monotonic() + min(RETRY_SECONDS * 2 ** (failures - 1), 60.0)
        throttle.log(
            logger, logging.WARNING, "loop-connection", "Could not open an event loop connection to %r: %s", alias, exc
        )
        return
    except BaseException as cancelled:  # its loop is ending
        reader.busy = reader.opening = False
        loop_readers.forget(alias, reader)
        # psycopg leaves a connection cancelled mid-handshake open in its connect generator, which this
        # traceback would keep alive for as long as the task keeps its exception.
        raise cancelled.with_traceback(None)  # noqa: B904 - the same exception, only its traceback cut
    reader.opening = False
    if loop_readers.failures.pop(alias, None):
        throttle.recovered(logger, "loop-connection", f"Event loop connection to {alias!r} opened")
    loop_readers.release(alias, reader)  # to a read waiting meanwhile, if any


async def _aclosed_with_loop(loop: asyncio.AbstractEventLoop, loop_readers: _LoopReaders) -> AsyncGenerator[None, None]:
    try:
        yield
    finally:
        loop_readers.close()
        if _loops.get(loop) is loop_readers:
            del _loops[loop]


@atexit.register
def _close() -> None:
    for loop_readers in list(_loops.values()):
        for readers in list(loop_readers.readers.values()):
            for reader in readers:
                reader.close()  # the process ends: busy or not
