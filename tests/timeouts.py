"""The server of the timeout tests (/mcp-timeouts): tools with a time limit, in the request and as tasks."""

import asyncio
import time

from django_mcp import McpRequest, McpServer, ToolRegistry
from django_mcp.tasks import McpTasks

timeout_tools = ToolRegistry(name="timeouts")


@timeout_tools.register(timeout_seconds=0.2)
async def slow_async(request: McpRequest, seconds: float = 5) -> str:
    await asyncio.sleep(seconds)
    return "finished"


@timeout_tools.register(timeout_seconds=0.2)
def slow_sync(request: McpRequest, seconds: float = 1) -> str:
    time.sleep(seconds)
    return "finished"


@timeout_tools.register(timeout_seconds=0.2, task_support="optional")
async def slow_report(request: McpRequest, seconds: float = 0.5) -> str:
    """In the request: 0.2 s at most. As a task: as long as it takes."""
    await asyncio.sleep(seconds)
    return "report ready"


@timeout_tools.register(task_support="required", task_timeout_seconds=0.3)
async def bounded_job(request: McpRequest, seconds: float = 5) -> str:
    await asyncio.sleep(seconds)
    return "job done"


@timeout_tools.register(task_support="required", task_timeout_seconds=0.3)
def bounded_sync_job(request: McpRequest, seconds: float = 1) -> str:
    time.sleep(seconds)
    return "job done"


timeouts_server = McpServer(
    tools=timeout_tools,
    extension_plugins=[McpTasks(ttl_seconds=60, poll_interval_seconds=0.1, max_tasks_per_owner=None)],
    urls_namespace="mcp_timeouts",
)
