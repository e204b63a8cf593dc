"""The store for async callers: its operations run in a small thread pool of its own, one per plugin.

Connections are recycled around each call (background tasks have no request to do it for them).
With ``TASK_FAST_PATHS``, ``tasks/get``'s read and, on PostgreSQL, a task's final write go on the
event loop's own connection instead when it is free (``loop_sqlite``, ``loop_postgres``).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from functools import partial
from typing import Any, ParamSpec, TypeVar

from django.db import DatabaseError, InterfaceError, OperationalError, close_old_connections, connections

from ..models import Task
from . import caps, loop_postgres, loop_sqlite, nodes, operations
from .database import fast_paths, parse_id, tasks_database
from .errors import KnownOutage, tables_missing, unmigrated
from .prepared import USE_STORE

P = ParamSpec("P")
R = TypeVar("R")

_sqlite_writer = threading.Lock()


def run_guarded(fn: Callable[P, R], writes: bool, /, *args: P.args, **kwargs: P.kwargs) -> R:
    """``fn(*args, **kwargs)`` on this thread's connection for the tasks, recycled around it."""
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


def guarded(fn: Callable[P, R], *, writes: bool) -> Callable[P, R]:
    """``fn`` run as :func:`run_guarded` runs it (for a thread that is not the store's)."""
    return partial(run_guarded, fn, writes)


def _enqueued(task_id: Any, enqueue: Callable[[], str]) -> None:
    operations.set_job(task_id, enqueue())


class TaskStore:
    """The door to the tasks table for async callers: each operation a coroutine run in this store's
    own small thread pool (:mod:`.operations`, the plain ORM), or on the event loop's connection
    where the fast paths can."""

    def __init__(self, threads: int) -> None:
        self._executor = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="django-mcp-store")
        self.outage = KnownOutage()

    async def _arun(self, writes: bool, fn: Callable[P, R], /, *args: P.args, **kwargs: P.kwargs) -> R:
        # Straight to the pool: these functions need no context variables and no thread-sensitive
        # routing, which sync_to_async would spend more on than a primary-key query costs.
        self.outage.admit()
        try:
            result = await asyncio.get_running_loop().run_in_executor(
                self._executor, partial(run_guarded, fn, writes, *args, **kwargs)
            )
        except (OperationalError, InterfaceError) as exc:
            self.outage.failed(exc)
            raise
        self.outage.succeeded()
        return result

    # -- reads --------------------------------------------------------------------------------------

    async def avisible(self, task_id: Any, owner: str, only: tuple[str, ...] | None = None) -> Task | None:
        """:func:`~.operations.visible`, read from the event loop when it can be (fast paths)."""
        if fast_paths():
            task = loop_sqlite.read_visible(task_id, owner, only)  # synchronous: a request never waits
            if task is USE_STORE:
                task = await loop_postgres.aread_visible(task_id, owner, only)
            if task is not USE_STORE:
                return task
        return await self._avisible_in_threads(task_id, owner, only)

    async def _avisible_in_threads(self, task_id: Any, owner: str, only: tuple[str, ...] | None) -> Task | None:
        # A read, though it deletes a task it finds expired: rarely.
        return await self._arun(False, operations.visible, task_id, owner, only)

    async def avisible_many(self, task_ids: Iterable[Any], owner: str) -> list[Task]:
        """:func:`~.operations.visible_many`."""
        return await self._arun(False, operations.visible_many, task_ids, owner)

    async def areload(self, task_id: Any) -> Task | None:
        """:func:`~.operations.reload`."""
        return await self._arun(False, operations.reload, task_id)

    async def aload_with_user(self, task_id: Any) -> Task | None:
        """:func:`~.operations.load_with_user`: as a fleet worker loads the task it runs."""
        return await self._arun(False, operations.load_with_user, task_id)

    # -- writes -------------------------------------------------------------------------------------

    async def acreate(self, **fields: Any) -> Task:
        """:func:`~.operations.create`."""
        return await self._arun(True, operations.create, **fields)

    async def awatch_many(self, task_ids: Iterable[Any], owner: str) -> list[Task]:
        """:func:`~.operations.watch_many`."""
        return await self._arun(True, operations.watch_many, task_ids, owner)

    async def aset_status_message(self, task_id: Any, message: str) -> Task | None:
        """:func:`~.operations.set_status_message`."""
        return await self._arun(True, operations.set_status_message, task_id, message)

    async def apark(self, task_id: Any, requests: Mapping[str, Any]) -> Task | None:
        """:func:`~.operations.park`."""
        return await self._arun(True, operations.park, task_id, requests)

    async def aanswer(self, task_id: Any, owner: str, responses: Mapping[str, Any]) -> tuple[Task | None, list[str]]:
        """:func:`~.operations.answer`."""
        return await self._arun(True, operations.answer, task_id, owner, responses)

    async def atake_answers(self, task_id: Any, keys: Iterable[str]) -> dict[str, Any] | None:
        """:func:`~.operations.take_answers`."""
        return await self._arun(True, operations.take_answers, task_id, keys)

    async def arequest_cancel(self, task_id: Any, owner: str | None) -> Task | None:
        """:func:`~.operations.request_cancel`."""
        return await self._arun(True, operations.request_cancel, task_id, owner)

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

    async def _afinish_in_threads(
        self, task_id: Any, status: str, *, result: Any, error: Any, message: str | None
    ) -> Task | None:
        return await self._arun(True, operations.finish, task_id, status, result=result, error=error, message=message)

    async def arenew_leases(self, task_ids: list[str], lease_seconds: float) -> tuple[list[str], list[str], list[str]]:
        """:func:`~.operations.renew_leases`."""
        return await self._arun(True, operations.renew_leases, task_ids, lease_seconds)

    async def areap_lapsed(self, running: Iterable[str], error: dict[str, Any], limit: int = 500) -> list[Task]:
        """:func:`~.operations.reap_lapsed`."""
        return await self._arun(True, operations.reap_lapsed, running, error, limit)

    async def afail_if_owner_gone(self, task: Task, error: dict[str, Any]) -> Task:
        """:func:`~.operations.fail_if_owner_gone`."""
        return await self._arun(True, operations.fail_if_owner_gone, task, error)

    async def afail_stale_queued(self, timeout_seconds: float, error: dict[str, Any], limit: int = 500) -> list[Task]:
        """:func:`~.operations.fail_stale_queued`."""
        return await self._arun(True, operations.fail_stale_queued, timeout_seconds, error, limit)

    async def aset_job(self, task_id: Any, job_id: str) -> None:
        """:func:`~.operations.set_job`."""
        await self._arun(True, operations.set_job, task_id, job_id)

    async def aenqueue(self, task_id: Any, enqueue: Callable[[], str]) -> None:
        """Run ``enqueue()`` (it hands the task's body to a worker fleet and returns the job's id), then
        store that id on the task: in one store thread, on one connection. (Holding one connection for
        the enqueue while waiting for a store thread to get another would starve a small pool.)"""
        await self._arun(True, _enqueued, task_id, enqueue)

    async def aforget(self, task_id: Any) -> int:
        """:func:`~.operations.forget`."""
        return await self._arun(True, operations.forget, task_id)

    async def aclaim(self, task_id: Any, node: str, lease_seconds: float, status_message: str) -> Task | None:
        """:func:`~.operations.claim`."""
        return await self._arun(True, operations.claim, task_id, node, lease_seconds, status_message)

    async def acancel_queued(self, task_id: Any) -> Task | None:
        """:func:`~.operations.cancel_queued`."""
        return await self._arun(True, operations.cancel_queued, task_id)

    async def asweep_expired_batch(self, now: datetime | None = None, scope: str | None = None) -> int:
        """:func:`~.caps.sweep_expired_batch`."""
        return await self._arun(True, caps.sweep_expired_batch, now, scope)

    async def arecord_node(self, name: str, now: datetime, **said: Any) -> None:
        """:func:`~.nodes.record_node`."""
        await self._arun(True, nodes.record_node, name, now, **said)

    def close(self) -> None:
        """Stop the threads once their work is done."""
        self._executor.shutdown(wait=False)
