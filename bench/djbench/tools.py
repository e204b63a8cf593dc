"""The bench tools: a sync echo, an instant task, a task that sleeps ``ms`` milliseconds."""

from __future__ import annotations

import asyncio
from typing import Any

from django_mcp import McpRequest, ToolRegistry
from django_mcp.tasks import TaskContext, astart_task, can_create_task

tools = ToolRegistry(name="bench")


@tools.register
def echo(request: McpRequest, text: str) -> str:
    """A sync tool: returns its argument (runs in a worker thread, like any sync handler)."""
    return text


@tools.register(task_support="optional")
async def instant(request: McpRequest) -> Any:
    """A task that finishes at once."""
    if not can_create_task(request):
        return "done"

    async def run(task: TaskContext) -> str:
        return "done"

    return await astart_task(request, run=run)


@tools.register(task_support="optional")
async def sleep(request: McpRequest, ms: int = 200) -> Any:
    """A task that sleeps ``ms`` milliseconds."""
    if not can_create_task(request):
        await asyncio.sleep(ms / 1000)
        return "slept"

    async def run(task: TaskContext) -> str:
        await asyncio.sleep(ms / 1000)
        return "slept"

    return await astart_task(request, run=run)
