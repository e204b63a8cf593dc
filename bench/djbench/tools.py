"""The bench tools: a sync echo, an instant task, a task that sleeps ``ms`` milliseconds, a task that parks,
a task that updates its status ``rate`` times a second.

The task tools are declarative (``task_support``): when the client declared the tasks extension the
body runs as the task (``request.task`` is its ``TaskContext``), otherwise it runs in the request.
"""

from __future__ import annotations

import asyncio

from django_mcp import McpRequest, ToolRegistry, elicit
from django_mcp.tasks import TaskRequest

tools = ToolRegistry(name="bench")

GO_ON = {"type": "object", "properties": {"go": {"type": "boolean"}}}


@tools.register
def echo(request: McpRequest, text: str) -> str:
    """A sync tool: returns its argument (runs in a worker thread, like any sync handler)."""
    return text


@tools.register(task_support="optional")
async def instant(request: McpRequest) -> str:
    """A task that finishes at once."""
    return "done"


@tools.register(task_support="optional")
async def sleep(request: McpRequest, ms: int = 200) -> str:
    """A task that sleeps ``ms`` milliseconds."""
    await asyncio.sleep(ms / 1000)
    return "slept"


@tools.register(task_support="required")
async def ask(request: McpRequest) -> str:
    """A task that parks in ``input_required`` until the client answers (the "parked tasks" scenario)."""
    await request.aask({"go": elicit("Go on?", GO_ON)})
    return "answered"


@tools.register(task_support="optional")
async def ticking(request: TaskRequest, rate: float = 10, seconds: float = 10) -> str:
    """A task that updates its status ``rate`` times a second for ``seconds`` (the "listen fan-out" scenario)."""
    ticks = max(1, round(rate * seconds))
    for tick in range(1, ticks + 1):
        await asyncio.sleep(1 / rate)
        if request.task is not None:
            await request.task.aupdate(f"tick {tick}/{ticks}")
    return "ticked"
