"""Servers with the tasks extension, and the task tools the tasks tests call."""

from __future__ import annotations

import asyncio
from typing import Any

from django_mcp import McpJsonRpcError, McpRequest, McpServer, ToolRegistry, elicit
from django_mcp.tasks import McpTasks, TaskContext, can_create_task, mcp_task
from tests.servers import TokenAuth

task_tools = ToolRegistry(name="tasks")
EVENTS: dict[str, Any] = {}
FORM = {"type": "object", "properties": {"ok": {"type": "boolean"}}}


@task_tools.register(task_support="optional")
async def quick(request: McpRequest, text: str = "done") -> Any:
    if not can_create_task(request):
        return f"sync:{text}"

    async def run(task: TaskContext) -> str:
        return f"task:{text}"

    return await mcp_task(request, run=run, status_message="Queued")


@task_tools.register(task_support="optional")
async def slow(request: McpRequest, seconds: float = 30, steps: int = 3) -> Any:
    async def run(task: TaskContext) -> str:
        for step in range(1, steps + 1):
            await asyncio.sleep(seconds / steps)
            await task.update(f"Step {step}/{steps}")
        return "slept"

    return await mcp_task(request, run=run)


@task_tools.register(task_support="optional")
async def stubborn(request: McpRequest) -> Any:
    """Ignores its signal: it is still cancelled at its next await."""

    async def run(task: TaskContext) -> str:
        EVENTS["stubborn"] = "running"
        try:
            while True:
                await asyncio.sleep(0.05)
        except asyncio.CancelledError:
            EVENTS["stubborn"] = f"cancelled, signal={task.cancelled}"
            raise

    return await mcp_task(request, run=run)


@task_tools.register(task_support="optional")
async def asks_twice(request: McpRequest) -> Any:
    async def run(task: TaskContext) -> str:
        first = await task.request_input({"confirm": elicit("Sure?", FORM)})
        second = await task.request_input({"confirm": elicit("Really sure?", FORM)})
        return f"{first['confirm'].content} then {second['confirm'].content}"

    return await mcp_task(request, run=run)


@task_tools.register(task_support="optional")
async def two_keys(request: McpRequest) -> Any:
    async def run(task: TaskContext) -> str:
        answers = await task.request_input({"a": elicit("A?", FORM), "b": elicit("B?", FORM)})
        return f"a={answers['a'].action} b={answers['b'].action}"

    return await mcp_task(request, run=run)


@task_tools.register(task_support="optional")
async def asks_sampling(request: McpRequest) -> Any:
    from django_mcp import sample

    async def run(task: TaskContext) -> str:
        await task.request_input({"q": sample([], max_tokens=5)})
        return "unreachable without sampling"

    return await mcp_task(request, run=run)


@task_tools.register(task_support="optional")
async def task_boom(request: McpRequest) -> Any:
    async def run(task: TaskContext) -> str:
        raise RuntimeError("kaput")

    return await mcp_task(request, run=run)


@task_tools.register(task_support="optional")
async def task_rpc_error(request: McpRequest) -> Any:
    async def run(task: TaskContext) -> str:
        raise McpJsonRpcError(-32042, "Quota exceeded", {"quota": 3})

    return await mcp_task(request, run=run)


@task_tools.register(
    task_support="optional",
    output_schema={"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
)
async def task_bad_output(request: McpRequest) -> Any:
    async def run(task: TaskContext) -> dict:
        return {"n": "not a number"}

    return await mcp_task(request, run=run)


@task_tools.register(task_support="required")
async def only_as_task(request: McpRequest) -> Any:
    EVENTS["only_as_task_ran"] = True

    async def run(task: TaskContext) -> str:
        return "ok"

    return await mcp_task(request, run=run)


@task_tools.register
async def progress_then_task(request: McpRequest) -> Any:
    reported = asyncio.Event()

    async def run(task: TaskContext) -> str:
        request.progress(5, total=10)  # dropped: tasks have no progress notifications
        reported.set()
        return "ok"

    handle = await mcp_task(request, run=run)
    await asyncio.wait_for(reported.wait(), 5)  # the run reported before the handle goes out
    return handle


@task_tools.register
async def non_json_result(request: McpRequest) -> Any:
    async def run(task: TaskContext) -> dict:
        return {"content": [{"type": "text", "text": "x"}], "structuredContent": {"when": object()}}

    return await mcp_task(request, run=run)


@task_tools.register
def plain(request: McpRequest) -> str:
    return "plain"


def tenant(request: McpRequest) -> str:
    return request.http_request.headers.get("X-Tenant", "nobody")


tasks_server = McpServer(
    tools=task_tools,
    extension_plugins=[
        McpTasks(ttl_ms=60_000, poll_interval_ms=250, bind=tenant, enabled=lambda r: r.headers.get("X-Tasks") != "off")
    ],
    urls_namespace="mcp_tasks",
)
small_server = McpServer(
    tools=task_tools,
    extension_plugins=[McpTasks(max=3, ttl_ms=1500, poll_interval_ms=100)],
    urls_namespace="mcp_small",
)
principal_server = McpServer(tools=task_tools, extension_plugins=[McpTasks()], auth=TokenAuth(), urls_namespace="mcp_p")
cap_server = McpServer(tools=task_tools, extension_plugins=[McpTasks(max=25, ttl_ms=120_000)], urls_namespace="mcp_cap")


@task_tools.register(task_support="required")
async def ask_then_task(request: McpRequest) -> Any:
    """MRTR rounds first, synchronously; only then the task."""
    answers = await request.ask(
        {"name": elicit("Name?", {"type": "object", "properties": {"name": {"type": "string"}}})}
    )
    name = (answers["name"].content or {}).get("name")

    async def run(task: TaskContext) -> str:
        return f"Hello {name}"

    return await mcp_task(request, run=run)


@task_tools.register
async def toggle_tool(request: McpRequest) -> str:
    """Changes this server's tool list (adds and removes a tool): listen streams in every process hear it."""

    def scratch(request: McpRequest) -> str:
        return "scratch"

    task_tools.register(scratch, name="scratch_tool")
    task_tools.unregister("scratch_tool")
    return "toggled"
