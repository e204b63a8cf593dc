"""The Tasks extension (``io.modelcontextprotocol/tasks``, SEP-2663).

Install :class:`McpTasks` on a server, then answer a ``tools/call`` with a task::

    @tool(task_support="optional")
    async def render(request, scene: str):
        if not can_create_task(request):
            return render_now(scene)

        async def run(task):
            await task.update("Rendering")
            return "Rendered."

        return await mcp_task(request, run=run, status_message="Queued")
"""

from .plugin import McpTasks, TasksUnavailable, can_create_task, cancel_task, mcp_task
from .runner import TaskContext
from .wire import EXTENSION_ID

__all__ = ["EXTENSION_ID", "McpTasks", "TaskContext", "TasksUnavailable", "can_create_task", "cancel_task", "mcp_task"]
