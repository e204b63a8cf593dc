"""``tasks/get``'s read of a PostgreSQL database (and a task's end) on the event loop, from a psycopg pool.

Through the store's threads a read by primary key costs a thread hop each way and a pooled connection's
checkout around the query's round trip, several times the round trip alone. So :func:`aread_visible`
sends the query from the loop itself, on a connection from a :class:`psycopg_pool.AsyncConnectionPool`
of that loop's own, on SQLite's rules (``loop_sqlite``): in autocommit (each read sees the latest
commit), and failing connections, an expired task (whose deletion is a write) or another backend answer
:data:`~.prepared.USE_STORE`: the caller goes through the store's threads as before. A read that finds
every connection in use waits, up to :data:`WAIT_SECONDS`, for one to be returned (the pool hands it
over), then goes to the store. Besides the task's ``SELECT`` a connection is sent only the time zone
Django also sets on its own connections: nothing on its session outlives a statement on a PgBouncer
server connection shared in transaction mode.

A task's final compare-and-set (``TaskStore.afinish``, the runner's last write) goes the same way when a
connection is free, through :func:`aupdate_active`: the task's end is then written, and reaches its own
worker's listen streams, without a thread's wake-up (a busy or failing pool leaves it to the store,
whose compare-and-set finds a task this one did end no longer active).

The connections are opened as Django opens its own (parameters, type adapters, time zone, column
converters), one when the pool opens and up to ``TASK_LOOP_CONNECTIONS`` per database per event loop
while reads wait; one idle for :data:`IDLE_SECONDS` is closed rather than used (the network may have
dropped it without a word). Needs psycopg 3 and psycopg-pool. A database with ``assume_role``, or a
project with ``connection_created`` receivers (``django.contrib.postgres`` has one), is left to the
store: they set up Django's own connections, which these would bypass.

No request waits for the pool to open: a loop's second read opens it (a loop made for one call, as
``async_to_sync`` makes under WSGI, never does), and reads go through the store until its first
connection is ready; the pool retries a failed connection with its own back-off. The pool belongs to
its loop and is closed with it: when the loop cancels its tasks (``asyncio.run``, uvicorn, asgiref's
``async_to_sync``, pytest-asyncio) or shuts down its async generators, when the next loop reads after
it was closed without doing either, or at exit. A test database can then be dropped after the tests.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import functools
import time
import weakref
from collections.abc import AsyncGenerator, Callable
from typing import Any

from django.db import connections, router
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.backends.signals import connection_created

from ... import compat
from ..conf import get_tasks_settings
from ..models import ACTIVE, Task
from .database import parse_id
from .prepared import USE_STORE, MaybeTask, load_row, read_statement, update_plan, visible_row

WAIT_SECONDS = 0.02
"""How long a read waits for a connection in use to be returned before it goes to the store instead
(a statement stuck on a dropped network must not hold up the reads queued behind it)."""

NO_WAIT_SECONDS = 0.001
"""How long a request waits when no connection is in use (the pool is replacing one) and a final
write always: the pool's shortest wait."""

IDLE_SECONDS = 30.0
"""A connection left unused this long is closed rather than used: a firewall or load balancer may have
dropped it without a word, and a statement on it would wait for the kernel to give up on the socket."""


@functools.cache
def _connection_class() -> type[Any]:
    # Here: the postgres extra is optional.
    import psycopg

    class LoopConnection(psycopg.AsyncConnection[Any]):
        """A pooled connection with the one cursor its statements go through (one per statement costs CPU)."""

        statements: Any
        returned_at: float

    return LoopConnection


class _DatabasePool:
    """One database's pool on one loop; ``in_use`` counts the connections taken from it."""

    __slots__ = ("alias", "database", "in_use", "limit", "name", "pool", "ready", "refusals")

    def __init__(self, alias: str, database: BaseDatabaseWrapper, limit: int, given_up: Callable[[Any], None]) -> None:
        # Here: the postgres extra is optional.
        import psycopg
        from psycopg_pool import AsyncConnectionPool, PoolClosed, PoolTimeout

        self.alias = alias
        self.database = database  # for its settings and converters: never connected
        self.name = database.settings_dict["NAME"]  # the test runner renames the database
        self.limit = limit
        self.in_use = 0
        self.ready = False  # until its first connection opens: reads go to the store meanwhile
        self.refusals = (PoolTimeout, PoolClosed)  # what getconn raises when no connection comes: imported once
        params = database.get_connection_params()
        # Django's cursor binds parameters on the client unless OPTIONS ask for the server's.
        client_side = issubclass(params.pop("cursor_factory"), psycopg.ClientCursor)
        params.update(autocommit=True, cursor_factory=psycopg.AsyncClientCursor if client_side else psycopg.AsyncCursor)
        self.pool: Any = AsyncConnectionPool(
            connection_class=_connection_class(),
            kwargs=params,
            min_size=1,
            max_size=limit,
            open=False,
            configure=self._aconfigure,
            name=f"django_mcp.tasks.{alias}",
            max_idle=IDLE_SECONDS,
            num_workers=1,
            reconnect_failed=given_up,
        )

    async def _aconfigure(self, link: Any) -> None:
        timezone_name = self.database.timezone_name  # set as on Django's own connection
        if timezone_name and link.info.parameter_status("TimeZone") != timezone_name:
            await link.execute(self.database.ops.set_time_zone_sql(), [timezone_name])
        link.statements = link.cursor()
        link.returned_at = time.monotonic()
        self.ready = True

    def stale(self, limit: int) -> bool:
        """Whether the setting changed or the database was renamed since this pool was made."""
        return limit != self.limit or connections.settings[self.alias]["NAME"] != self.name


class _LoopPools:
    """One loop's pools, closed with the loop (see the module's docstring)."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.pools: dict[str, _DatabasePool] = {}
        self.closing: set[asyncio.Task[None]] = set()
        self.generator_closer: AsyncGenerator[None, None] | None = None
        self.task_closer: asyncio.Task[None] | None = None

    async def aopen(self, alias: str, database: BaseDatabaseWrapper, limit: int) -> None:
        if self.task_closer is None:
            # psycopg_pool's worker swallows the cancellation of a connection attempt in flight, so a loop
            # ending with one (asyncio.run cancels its tasks and waits for them) would wait forever: this
            # task is cancelled with them, and closes the pools, which stops the workers.
            self.task_closer = self.loop.create_task(self._aclose_when_cancelled())
            self.generator_closer = self._aclosed_with_loop()
            await anext(self.generator_closer)  # now the loop's: loop.shutdown_asyncgens() closes it
        held = self.pools[alias] = _DatabasePool(alias, database, limit, self._given_up)
        await held.pool.open(wait=False)

    def _given_up(self, pool: Any) -> None:
        """A pool stopped trying to connect (``reconnect_timeout``): the next read opens another."""
        for alias, held in list(self.pools.items()):
            if held.pool is pool:
                self.retire(alias)

    def retire(self, alias: str) -> None:
        """Stop handing out ``alias``'s pool and close it in the background (connections in use on return)."""
        held = self.pools.pop(alias)
        closing = self.loop.create_task(held.pool.close(timeout=1))
        self.closing.add(closing)
        closing.add_done_callback(self.closing.discard)

    async def aclose(self) -> None:
        pools, self.pools = list(self.pools.values()), {}
        for held in pools:
            # First: a loop ending cancels the pool's workers with its other tasks, and the pool's close()
            # then stops at their CancelledError, with the idle connections already out of the pool.
            _close_idle(held)
            with contextlib.suppress(asyncio.CancelledError):
                await held.pool.close(timeout=1)
        if _loops.get(self.loop) is self:
            del _loops[self.loop]

    def close_idle(self) -> None:
        """Close the idle connections without the loop (closed, or the process ending)."""
        for held in self.pools.values():
            _close_idle(held)

    async def _aclose_when_cancelled(self) -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:  # (not when a closed loop's tasks are collected)
            await self.aclose()
            raise

    async def _aclosed_with_loop(self) -> AsyncGenerator[None, None]:
        try:
            yield
        finally:
            await self.aclose()
            if self.task_closer is not None:  # a loop that does not cancel its tasks: not left pending
                self.task_closer.cancel()
                await asyncio.wait([self.task_closer])


# Not weakly keyed: a loop's async generators hold its finalizer hook, so the closer keeps it alive.
_loops: dict[asyncio.AbstractEventLoop, _LoopPools] = {}
_elsewhere: set[str] = set()  # aliases whose database this module does not read
_read_once: weakref.WeakSet[asyncio.AbstractEventLoop] = weakref.WeakSet()  # loops that read, without a pool yet


async def aread_visible(task_id: Any, owner: str, only: tuple[str, ...] | None = None) -> MaybeTask:
    """The task if it exists, belongs to ``owner`` and has not expired; :data:`USE_STORE` when unsure.

    ``only``: the fields to load besides the primary key and ``expires_at`` (:func:`~.prepared.read_plan`).
    """
    pk = parse_id(task_id)
    if pk is None:
        return None
    taken = await _atake(router.db_for_read(Task), wait=True)
    if taken is None:
        return USE_STORE
    database = taken[0].database
    try:
        plan, params = read_statement(database, pk, owner, only)
    except BaseException:
        await _agive_back(*taken)
        raise
    found = await _aexecute(*taken, plan.sql, params)
    return found if found is USE_STORE else visible_row(database, plan, found)


async def aupdate_active(pk: Any, returning: tuple[str, ...] | None, values: dict[str, Any]) -> MaybeTask:
    """The store's compare-and-set of an active task (``operations._update_active``) sent from the loop.

    Autocommit: the statement's own commit (durable, as the store's) ends it. :data:`USE_STORE` when no
    connection is free or it fails: the caller runs it in the store, where a statement that did commit
    before its connection failed finds the task no longer active (None), as a retry there would.
    """
    taken = await _atake(router.db_for_write(Task))
    if taken is None:
        return USE_STORE
    database = taken[0].database
    sql, fields, plan = update_plan(database, tuple(values), returning)
    params = [field.get_db_prep_save(values[field.name], database) for field in fields]
    params += [Task._meta.pk.get_db_prep_value(pk, database), *(status.value for status in ACTIVE)]
    # Shielded: a supervisor cancelled meanwhile (its loop ending) leaves the statement to finish, as a
    # store thread would; the task's outcome is then recorded, only not published.
    found = await asyncio.shield(_aexecute(*taken, sql, params))
    if found is USE_STORE or found is None:
        return found
    return load_row(database, plan, found)


async def _atake(alias: str, *, wait: bool = False) -> tuple[_DatabasePool, Any] | None:
    """A connection to ``alias`` from this loop's pool, now the caller's; or None: to the store.

    None until the pool's first connection is ready, and when none comes free within
    :data:`WAIT_SECONDS` (``wait``, while another is in use) or :data:`NO_WAIT_SECONDS`.
    """
    limit = get_tasks_settings().TASK_LOOP_CONNECTIONS
    if alias in _elsewhere or not limit:
        return None
    loop = asyncio.get_running_loop()
    loop_pools = _loops.get(loop)
    held = None if loop_pools is None else loop_pools.pools.get(alias)
    if held is not None and held.stale(limit):
        loop_pools.retire(alias)  # type: ignore[union-attr]  # (held is one of its pools)
        held = None
    if held is None:
        if (database := _readable(alias)) is None:
            return None
        if loop not in _read_once:  # a loop made for one call never opens a pool
            _read_once.add(loop)
        else:
            if loop_pools is None:
                loop_pools = _loops[loop] = _new_loop_pools(loop)
            await loop_pools.aopen(alias, database, limit)
        return None
    if not held.ready:
        return None
    try:
        link = await held.pool.getconn(WAIT_SECONDS if wait and held.in_use else NO_WAIT_SECONDS)
    except held.refusals:
        return None
    held.in_use += 1
    if time.monotonic() - link.returned_at > IDLE_SECONDS:
        await link.close()  # the pool opens another in its place
        await _agive_back(held, link)
        return None
    return held, link


async def _agive_back(held: _DatabasePool, link: Any) -> None:
    held.in_use -= 1
    link.returned_at = time.monotonic()
    await held.pool.putconn(link)  # a broken or closed one is replaced, into a closed pool closed


async def _aexecute(held: _DatabasePool, link: Any, sql: str, params: Any) -> Any:
    """The one row ``sql`` answers (or None), or :data:`USE_STORE` if the statement failed; gives ``link`` back."""
    try:
        await link.statements.execute(sql, params)
        return await link.statements.fetchone()
    except held.database.Database.Error:  # type: ignore[attr-defined]  # the wrapper's psycopg
        return USE_STORE  # (a statement the server refused: the store's threads raise it as Django words it)
    except BaseException:
        # Cancelled mid-query (psycopg has cancelled it on the server): a new connection is the known state.
        await link.close()
        raise
    finally:
        await _agive_back(held, link)


def _close_idle(held: _DatabasePool) -> None:
    for link in compat.pool_idle_connections(held.pool):
        link.pgconn.finish()  # what AsyncConnection.close() does, without a loop to await on


def _new_loop_pools(loop: asyncio.AbstractEventLoop) -> _LoopPools:
    for other in list(_loops):
        if other.is_closed():  # closed without cancelling its tasks or shutting down its async generators
            others = _loops.pop(other, None)
            if others is not None:
                others.close_idle()
    return _LoopPools(loop)


def _readable(alias: str) -> BaseDatabaseWrapper | None:
    """A wrapper of ``alias`` as Django makes it (never connected), if this module reads its database."""
    database = connections.create_connection(alias)
    if database.vendor != "postgresql" or database.settings_dict["OPTIONS"].get("assume_role"):
        _elsewhere.add(alias)
        return None
    # Here: the postgres extra is optional.
    from django.db.backends.postgresql.base import DatabaseWrapper as PostgresDatabase
    from django.db.backends.postgresql.psycopg_any import is_psycopg3

    if type(database) is not PostgresDatabase or not is_psycopg3 or not _pool_installed():  # a subclass, psycopg2
        _elsewhere.add(alias)
        return None
    if connection_created.has_listeners(PostgresDatabase):  # they set up Django's connections, not these
        _elsewhere.add(alias)
        return None
    proactor = getattr(asyncio, "ProactorEventLoop", None)  # Windows' default loop, which psycopg refuses
    if proactor is not None and isinstance(asyncio.get_running_loop(), proactor):
        _elsewhere.add(alias)
        return None
    return database


def _pool_installed() -> bool:
    try:
        import psycopg_pool  # noqa: F401
    except ImportError:
        return False
    return True


@atexit.register
def _close() -> None:
    for loop_pools in list(_loops.values()):
        loop_pools.close_idle()  # the process ends
