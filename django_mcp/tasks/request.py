"""The request a task tool's body gets (:class:`TaskRequest`), and the tool call a task may be created for."""

from __future__ import annotations

import contextvars
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..server.context import McpRequest
from .context import TaskContext

if TYPE_CHECKING:
    from ..server.tools.definition import Tool
    from .plugin import McpTasks


class TaskRequest(McpRequest):
    """The request a task tool's body gets: an :class:`~django_mcp.McpRequest` plus :attr:`task`.

    ``task`` is the :class:`TaskContext` when the body runs as a task (it
    then asks the client through the task: ``await request.aask(...)`` parks
    it in ``input_required``), and None when it runs in the request.
    """

    task: TaskContext | None

    @classmethod
    def of(cls, request: McpRequest, task: TaskContext | None) -> TaskRequest:
        wrapped = cls.__new__(cls)
        wrapped.__dict__.update(request.__dict__)
        wrapped.task = task
        if task is not None:
            wrapped._sink = None  # the response is gone: progress travels as the task's statusMessage
            wrapped._asker = task.arequest_input
        return wrapped


def current_task(request: McpRequest) -> TaskContext | None:
    """The task the request's body runs as, or None (``request.task`` where it exists)."""
    task = getattr(request, "task", None)
    return task if isinstance(task, TaskContext) else None


@dataclass(frozen=True)
class ToolCall:
    plugin: McpTasks
    request: McpRequest
    tool: Tool
    served: bool
    """Whether a task can be created for the call: the extension serves the request, the client declared
    it, and the body can run on after the response (an ASGI server)."""


current_call: contextvars.ContextVar[ToolCall | None] = contextvars.ContextVar("django_mcp_task_call", default=None)
