"""The store for async callers: its operations run in a small thread pool of its own, one per plugin.

Connections are recycled around each call (background tasks have no request to do it for them).
With ``TASK_FAST_PATHS``, ``tasks/get``'s read and, on PostgreSQL, a task's final write go on the
event loop's own connection instead when it is free (``loop_sqlite``, ``loop_postgres``).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from functools import partial, wraps
from typing import Any, ParamSpec, TypeVar

from django.db import DatabaseError, InterfaceError, OperationalError, close_old_connections, connections

from ..models import Task
from . import caps, loop_postgres, loop_sqlite, operations
from .database import fast_paths, parse_id, tasks_database
from .errors import KnownOutage, tables_missing, unmigrated
from .prepared import USE_STORE

P = ParamSpec("P")
R = TypeVar("R")

_sqlite_writer = threading.Lock()


def guarded(fn: Callable[P, R], *, writes: bool) -> Callable[P, R]:
    @wraps(fn)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        # A pooled or server connection is recycled around every call (Django's own rule, as for a
        # request). A SQLite connection is a file handle whose reopening (and PRAGMAs) costs more
        # than the query: each of the few store threads keeps its own.
        conn = connections[tasks_database()]
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


def _enqueued(task_id: Any, enqueue: Callable[[], str]) -> None:
    operations.set_job(task_id, enqueue())


class TaskStore:
    """The store's operations as coroutines (``a``-prefixed), each run in this store's own small thread pool."""

    def __init__(self, threads: int) -> None:
        self._executor = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="django-mcp-store")
        self.outage = KnownOutage()
        ops = operations
        self.acreate = self.in_threads(ops.create)
        self._avisible_in_threads = self.in_threads(ops.visible, writes=False)  # deletes one found expired: rarely
        self.avisible_many = self.in_threads(ops.visible_many, writes=False)
        self.awatch_many = self.in_threads(ops.watch_many)
        self.areload = self.in_threads(ops.reload, writes=False)
        self.aset_status_message = self.in_threads(ops.set_status_message)
        self.apark = self.in_threads(ops.park)
        self.aanswer = self.in_threads(ops.answer)
        self.atake_answers = self.in_threads(ops.take_answers)
        self.arequest_cancel = self.in_threads(ops.request_cancel)
        self._afinish_in_threads = self.in_threads(ops.finish)
        self.arenew_leases = self.in_threads(ops.renew_leases)
        self.areap_lapsed = self.in_threads(ops.reap_lapsed)
        self.afail_if_owner_gone = self.in_threads(ops.fail_if_owner_gone)
        self.aset_job = self.in_threads(ops.set_job)
        self.aforget = self.in_threads(ops.forget)
        self.aclaim = self.in_threads(ops.claim)
        self.acancel_queued = self.in_threads(ops.cancel_queued)
        self.afail_stale_queued = self.in_threads(ops.fail_stale_queued)
        self.asweep_expired_batch = self.in_threads(caps.sweep_expired_batch)
        self._aload_with_user = self.in_threads(ops.load_with_user, writes=False)

    async def avisible(self, task_id: Any, owner: str, only: tuple[str, ...] | None = None) -> Task | None:
        """:func:`~.operations.visible`, read from the event loop when it can be (fast paths)."""
        if fast_paths():
            task = loop_sqlite.read_visible(task_id, owner, only)  # synchronous: a request never waits
            if task is USE_STORE:
                task = await loop_postgres.aread_visible(task_id, owner, only)
            if task is not USE_STORE:
                return task
        return await self._avisible_in_threads(task_id, owner, only)

    async def afinish(
        self, task_id: Any, status: str, *, result: Any = None, error: Any = None, message: str | None = None
    ) -> Task | None:
        """:func:`~.operations.finish`, from the event loop on PostgreSQL when its connection is free (fast paths)."""
        pk = parse_id(task_id)
        if pk is not None and fast_paths():
            values = operations.finished_values(status, result, error, message)
            task = await loop_postgres.aupdate_active(pk, operations.FINISHED_FIELDS, values)
            if task is not USE_STORE:
                return task
        return await self._afinish_in_threads(task_id, status, result=result, error=error, message=message)

    async def aload_with_user(self, task_id: Any) -> Task | None:
        """The task with its user, as a fleet worker loads the task it runs (``None``: no such task)."""
        return await self._aload_with_user(task_id)

    async def aenqueue(self, task_id: Any, enqueue: Callable[[], str]) -> None:
        """Run ``enqueue()`` (it hands the task's body to a worker fleet and returns the job's id), then
        store that id on the task: in one store thread, on one connection. (Holding one connection for
        the enqueue while waiting for a store thread to get another would starve a small pool.)"""
        await self.in_threads(_enqueued)(task_id, enqueue)

    def in_threads(self, fn: Callable[P, R], *, writes: bool = True) -> Callable[P, Coroutine[Any, Any, R]]:
        """``fn`` (sync ORM code) as a coroutine run in this store's threads, its connection recycled around it."""
        # Straight to the pool: these functions need no context variables and no thread-sensitive
        # routing, which sync_to_async would spend more on than a primary-key query costs.
        run, executor, outage = guarded(fn, writes=writes), self._executor, self.outage

        async def in_threads(*args: P.args, **kwargs: P.kwargs) -> R:
            outage.admit()
            try:
                result = await asyncio.get_running_loop().run_in_executor(executor, partial(run, *args, **kwargs))
            except (OperationalError, InterfaceError) as exc:
                outage.failed(exc)
                raise
            outage.succeeded()
            return result

        return in_threads

    def close(self) -> None:
        """Stop the threads once their work is done."""
        self._executor.shutdown(wait=False)
