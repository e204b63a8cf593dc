"""The tasks-extension fixtures (conformance notes §2.9): greet, slow_compute, failing_job,
protocol_error_job, confirm_delete, multi_input and test_tool_with_task."""

from __future__ import annotations

import asyncio
from typing import Any

from django_mcp import McpJsonRpcError, McpRequest, ToolError, elicit, tool
from django_mcp.tasks import TaskContext, astart_task, can_create_task

CONFIRM = {"type": "object", "properties": {"confirm": {"type": "boolean"}}, "required": ["confirm"]}


@tool(description="Greets synchronously (never a task).")
def greet(request: McpRequest, name: str) -> str:
    return f"Hello, {name}!"


async def _sleep_in_steps(task: TaskContext | None, seconds: float) -> None:
    steps = max(1, int(seconds * 4))
    for step in range(1, steps + 1):
        await asyncio.sleep(seconds / steps)
        if task is not None:
            await task.aupdate(f"Step {step}/{steps}")


@tool(task_support="optional", description="Sleeps `seconds`, as a task when the client allows it.")
async def slow_compute(request: McpRequest, seconds: float = 1, label: str = "") -> Any:
    done = f"Computed {label or 'result'} after {seconds} s"
    if seconds <= 0 or not can_create_task(request):
        await asyncio.sleep(max(seconds, 0))
        return done

    async def run(task: TaskContext) -> str:
        await _sleep_in_steps(task, seconds)
        return done

    return await astart_task(request, run=run, status_message="Queued")


@tool(task_support="required", description="Runs about a second as a task, then fails as a tool error.")
async def failing_job(request: McpRequest) -> Any:
    async def run(task: TaskContext) -> str:
        await asyncio.sleep(1)
        raise ToolError("failing_job failed on purpose")

    return await astart_task(request, run=run)


@tool(task_support="optional", description="Fails with a JSON-RPC error.")
async def protocol_error_job(request: McpRequest) -> Any:
    error = McpJsonRpcError(-32603, "protocol_error_job failed on purpose", {"fixture": "protocol_error_job"})
    if not can_create_task(request):
        raise error

    async def run(task: TaskContext) -> str:
        await asyncio.sleep(0.2)
        raise error

    return await astart_task(request, run=run)


@tool(task_support="optional", description="Asks for confirmation mid-task before deleting `filename`.")
async def confirm_delete(request: McpRequest, filename: str) -> Any:
    async def run(task: TaskContext) -> str:
        answers = await task.arequest_input({"confirm": elicit(f"Delete {filename}?", CONFIRM)})
        answer = answers["confirm"]
        confirmed = answer.action == "accept" and bool((answer.content or {}).get("confirm"))
        return f"Deleted {filename}" if confirmed else f"Kept {filename}"

    return await astart_task(request, run=run)


@tool(task_support="optional", description="Asks two questions at once mid-task.")
async def multi_input(request: McpRequest) -> Any:
    async def run(task: TaskContext) -> str:
        answers = await task.arequest_input(
            {
                "first_name": elicit("First name?", {"type": "object", "properties": {"name": {"type": "string"}}}),
                "last_name": elicit("Last name?", {"type": "object", "properties": {"name": {"type": "string"}}}),
            }
        )
        return " ".join(str((a.content or {}).get("name", "?")) for a in answers.values())

    return await astart_task(request, run=run)


@tool(
    task_support="required", run_body_as_task=False, description="Asks for a name (MRTR), then greets it from a task."
)
async def test_tool_with_task(request: McpRequest) -> Any:
    answers = await request.aask(
        {"name": elicit("Your name?", {"type": "object", "properties": {"name": {"type": "string"}}})}
    )
    name = (answers["name"].content or {}).get("name", "stranger")

    async def run(task: TaskContext) -> str:
        await asyncio.sleep(0.1)
        return f"Hello, {name}! (from a task)"

    return await astart_task(request, run=run)
