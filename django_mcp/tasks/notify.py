"""Telling of a task's change: the project's signals, the admin's task monitors and every listen stream watching
it, in every process."""

from __future__ import annotations

from ..protocol.jsonrpc import notification
from ..server.notify import abroadcast
from .models import TERMINAL, Task
from .monitoring import feed
from .signals import task_changed, task_finished
from .wire import detailed_task


def task_group(task_id: str) -> str:
    """The Channels group that listen streams watching this task join."""
    return f"django_mcp.task.{task_id}"


async def anotify_changed(task: Task) -> None:
    """Tell of a change of the task: the project's receivers (signals), the admin's task monitors (while
    one is open), and every listen stream watching it, in every process.

    ``task`` is the row as the change left it (read in or after the statement making the change), and
    this is called once per change, by the process that made it: a task no listen stream ever
    subscribed to (not ``watched``) has no stream to tell.
    """
    final = task.status in TERMINAL  # a task's last state: its own worker's streams have it at once
    if task_changed.receivers:
        await task_changed.asend(sender=Task, task=task)
    if final and task_finished.receivers:
        await task_finished.asend(sender=Task, task=task)
    deferred = task.get_deferred_fields()
    await feed.aoffer(task, deferred)  # the admin's task monitors, while one is open
    if "watched" not in deferred and not task.watched:
        return
    await abroadcast(task_group(str(task.id)), notification("notifications/tasks", detailed_task(task)), final=final)
