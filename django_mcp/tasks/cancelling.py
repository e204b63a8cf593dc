"""Cancelling a task, one way for every caller: ``tasks/cancel``, the admin's button, :func:`acancel_task`."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from functools import cache
from typing import Any, Protocol

from asgiref.sync import async_to_sync

from .models import ACTIVE, Task
from .notify import anotify_changed
from .runner import asend_control
from .store import InCallersThread, TaskStore


class CancelOperations(Protocol):
    """What cancelling asks of the store (:class:`TaskStore`, or :class:`InCallersThread` for a sync caller)."""

    async def acancel_queued(self, task_id: Any) -> Task | None: ...

    async def areload(self, task_id: Any) -> Task | None: ...

    async def arequest_cancel(self, task_id: Any, owner: str | None) -> Task | None: ...


async def acancel(store: CancelOperations, task: Task, deliver: Callable[[Task], Awaitable[None]]) -> None:
    """Cancel ``task``: a queued fleet task no worker took never starts; any other active task is flagged.

    The flag is set in the database (the owner also finds it there at its next lease renewal), and
    ``deliver`` tells the process running it at once. A terminal task is left as it is.
    """
    if task.status in ACTIVE and task.backend and not task.node:
        cancelled = await store.acancel_queued(task.id)  # no worker has it yet: it never starts
        if cancelled is not None:
            await anotify_changed(cancelled)
            return
        task = await store.areload(task.id) or task  # a worker claimed it meanwhile: cancel it there
    if task.status in ACTIVE:
        flagged = await store.arequest_cancel(task.id, None)
        if flagged is not None and flagged.status in ACTIVE:
            await deliver(flagged)


@cache
def _store() -> TaskStore:
    """The store of the callers outside any ``McpTasks`` (the admin): one thread, made on first use."""
    return TaskStore(1)


async def _tell_its_process(task: Task) -> None:
    if task.node:
        await asend_control(task.node, str(task.id), "cancel")


async def acancel_task(task: Task) -> None:
    """Request cancellation of a task (the admin's action; ``tasks/cancel`` does the same).

    The flag is set in the database (the owner also finds it there), and the owning process is told
    through the Channels layer. A terminal task is left as it is.
    """
    await acancel(_store(), task, _tell_its_process)


def cancel_task(task: Task) -> None:
    """:func:`acancel_task` for sync code (the admin): on the caller's connection, in its transaction."""
    async_to_sync(acancel)(InCallersThread(), task, _tell_its_process)
