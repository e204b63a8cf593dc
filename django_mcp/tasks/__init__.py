"""The Tasks extension (``io.modelcontextprotocol/tasks``, SEP-2663).

Install :class:`McpTasks` on a server, then mark a tool: when the client
declared the extension its body runs as a task (``request.task`` is the
:class:`TaskContext`); otherwise it runs in the request::

    @tool(task_support="optional")
    async def render(request, scene: str):
        task = current_task(request)
        for frame in range(100):
            await render_frame(scene, frame)
            if task is not None:
                await task.aupdate(f"Frame {frame + 1}/100")
        return "Rendered."

A tool that decides per request registers with ``run_body_as_task=False``
and calls :func:`astart_task` (``start_task`` from sync code).
"""

from .cancelling import acancel_task, cancel_task
from .context import TaskContext
from .plugin import McpTasks, astart_task, can_create_task, start_task
from .request import TaskRequest, current_task
from .signals import task_changed, task_created, task_finished
from .wire import EXTENSION_ID

__all__ = [
    "EXTENSION_ID",
    "McpTasks",
    "TaskContext",
    "TaskRequest",
    "acancel_task",
    "astart_task",
    "can_create_task",
    "cancel_task",
    "current_task",
    "start_task",
    "task_changed",
    "task_created",
    "task_finished",
]
