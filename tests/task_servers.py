"""Servers with the tasks extension, and the task tools the tasks tests call."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from django_mcp import McpJsonRpcError, McpRequest, McpServer, ToolRegistry, elicit
from django_mcp.endpoint import servers
from django_mcp.tasks import (
    McpTasks,
    TaskContext,
    TaskRequest,
    astart_task,
    can_create_task,
    current_task,
    start_task,
)
from tests.servers import TokenAuth

task_tools = ToolRegistry(name="tasks")
EVENTS: dict[str, Any] = {}
FORM = {"type": "object", "properties": {"ok": {"type": "boolean"}}}


@task_tools.register(task_support="optional", run_body_as_task=False)
async def quick(request: McpRequest, text: str = "done") -> Any:
    if not can_create_task(request):
        return f"sync:{text}"

    async def run(task: TaskContext) -> str:
        return f"task:{text}"

    return await astart_task(request, run=run, status_message="Queued")


# -- the declarative form: the body itself runs as the task -------------------------------


_METAS_SEEN: list[Any] = []


@task_tools.register(task_support="optional")
async def request_seen(request: McpRequest, note: str = "") -> str:
    """What the body's request holds: as a task, only the caller, the call and the client's declaration."""
    http = request.http_request
    _METAS_SEEN.append(request.meta)  # kept: no two objects seen ever share an id()
    return json.dumps(
        {
            "task": current_task(request) is not None,
            "headers": dict(request.headers),
            "user": getattr(request.user, "username", None),
            "params": request.params,
            "meta": sorted(http.META),
            "get": dict(http.GET),
            "version": request.protocol_version,
            "capabilities": sorted(request.client_capabilities),
            "progress_token": request.meta.progress_token,
            "meta_object": id(request.meta),
            "read_only": _refuses_writes(http),
        }
    )


def _refuses_writes(http: Any) -> bool:
    try:
        http.META["HTTP_X_NOTE"] = "written"
    except TypeError:
        return True
    return False


@task_tools.register(task_support="optional")
async def declared(request: TaskRequest, text: str = "x") -> str:
    task = current_task(request)
    if task is not None:
        await task.aupdate(f"working on {text}")
        answers = await request.aask({"ok": elicit("Go on?", FORM)})  # parks the task in input_required
        return f"task {task.id}: {text} {answers['ok'].action}"
    return f"inline: {text}"


@task_tools.register(task_support="optional", task_status_message="Queued")
async def declared_queued(request: TaskRequest) -> str:
    """The handle of the declarative form carries its first statusMessage."""
    assert request.task is not None
    await asyncio.sleep(30)
    return "never"


@task_tools.register(task_support="optional")
async def declared_sync_progress(request: TaskRequest, steps: int = 3) -> str:
    """Reports progress at every step (a task's statusMessage)."""
    for step in range(1, steps + 1):
        if request.task is not None:
            await request.task.aupdate(f"step {step}/{steps}")
    return f"{steps} steps"


@task_tools.register(task_support="optional")
def declared_sync(request: TaskRequest, text: str = "x") -> str:
    """A plain def body runs in a thread, as the task too (sync twins of update and input)."""
    if request.task is not None:
        request.task.update(f"sync working on {text}")
        answers = request.task.request_input({"ok": elicit("Go on?", FORM)})
        return f"sync task: {text} {answers['ok'].action}"
    return f"sync inline: {text}"


@task_tools.register(task_support="optional", run_body_as_task=False)
def sync_starts_a_task(request: McpRequest) -> Any:
    """A sync handler with a plain def run: never stuck in working."""

    def run(task: TaskContext) -> str:
        task.update("in a thread")
        return "ran in a thread"

    return start_task(request, run=run)


@task_tools.register(task_support="optional", run_body_as_task=False)
async def wrong_run(request: McpRequest) -> Any:
    async def run(task: TaskContext) -> str:
        return "never"

    return await astart_task(request, run=run(None))  # type: ignore[arg-type]  # a coroutine, not a function


@task_tools.register(task_support="optional")
async def slow(request: McpRequest, seconds: float = 30, steps: int = 3) -> Any:
    async def run(task: TaskContext) -> str:
        for step in range(1, steps + 1):
            await asyncio.sleep(seconds / steps)
            await task.aupdate(f"Step {step}/{steps}")
        return "slept"

    return await astart_task(request, run=run)


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

    return await astart_task(request, run=run)


@task_tools.register(task_support="optional")
async def where_it_runs(request: TaskRequest) -> str:
    """Records the asyncio task its body runs in, then sleeps until cancelled."""
    task = current_task(request)
    assert task is not None
    EVENTS[task.id] = asyncio.current_task()
    await asyncio.sleep(3600)
    return "woke"


@task_tools.register(task_support="optional")
async def asks_twice(request: McpRequest) -> Any:
    async def run(task: TaskContext) -> str:
        first = await task.arequest_input({"confirm": elicit("Sure?", FORM)})
        second = await task.arequest_input({"confirm": elicit("Really sure?", FORM)})
        return f"{first['confirm'].content} then {second['confirm'].content}"

    return await astart_task(request, run=run)


@task_tools.register(task_support="optional")
async def two_keys(request: McpRequest) -> Any:
    async def run(task: TaskContext) -> str:
        answers = await task.arequest_input({"a": elicit("A?", FORM), "b": elicit("B?", FORM)})
        return f"a={answers['a'].action} b={answers['b'].action}"

    return await astart_task(request, run=run)


@task_tools.register(task_support="optional")
async def asks_sampling(request: McpRequest) -> Any:
    from django_mcp import sample

    async def run(task: TaskContext) -> str:
        await task.arequest_input({"q": sample([], max_tokens=5)})
        return "unreachable without sampling"

    return await astart_task(request, run=run)


@task_tools.register(task_support="optional")
async def task_boom(request: McpRequest) -> Any:
    async def run(task: TaskContext) -> str:
        raise RuntimeError("kaput")

    return await astart_task(request, run=run)


@task_tools.register(task_support="optional", run_body_as_task=False)
async def run_without_task(request: McpRequest) -> Any:
    async def run() -> str:  # forgot the task parameter: calling it raises TypeError
        return "never"

    return await astart_task(request, run=run)  # type: ignore[arg-type]


@task_tools.register(task_support="optional")
async def task_rpc_error(request: McpRequest) -> Any:
    async def run(task: TaskContext) -> str:
        raise McpJsonRpcError(-32042, "Quota exceeded", {"quota": 3})

    return await astart_task(request, run=run)


@task_tools.register(
    task_support="optional",
    output_schema={"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
)
async def task_bad_output(request: McpRequest) -> Any:
    async def run(task: TaskContext) -> dict:
        return {"n": "not a number"}

    return await astart_task(request, run=run)


@task_tools.register(task_support="required")
async def only_as_task(request: McpRequest) -> Any:
    EVENTS["only_as_task_ran"] = True

    async def run(task: TaskContext) -> str:
        return "ok"

    return await astart_task(request, run=run)


@task_tools.register(task_support="optional", run_body_as_task=False)
async def progress_then_task(request: McpRequest) -> Any:
    reported = asyncio.Event()

    async def run(task: TaskContext) -> str:
        request.progress(5, total=10)  # dropped: tasks have no progress notifications
        reported.set()
        return "ok"

    handle = await astart_task(request, run=run)
    await asyncio.wait_for(reported.wait(), 5)  # the run reported before the handle goes out
    return handle


@task_tools.register(task_support="optional", run_body_as_task=False)
async def non_json_result(request: McpRequest) -> Any:
    async def run(task: TaskContext) -> dict:
        return {"content": [{"type": "text", "text": "x"}], "structuredContent": {"when": object()}}

    return await astart_task(request, run=run)


@task_tools.register
def plain(request: McpRequest) -> str:
    return "plain"


def tenant(request: McpRequest) -> str:
    return request.http_request.headers.get("X-Tenant", "nobody")


tasks_server = McpServer(
    tools=task_tools,
    extension_plugins=[
        McpTasks(
            ttl_seconds=60,
            poll_interval_seconds=0.25,
            bind=tenant,
            enabled=lambda r: r.headers.get("x-tasks") != "off",
            max_tasks_per_owner=None,  # bursts of one tenant (the live tests); the default cap: /mcp-fair/
        )
    ],
    urls_namespace="mcp_tasks",
)
small_server = McpServer(
    tools=task_tools,
    extension_plugins=[McpTasks(max_tasks=3, ttl_seconds=1.5, poll_interval_seconds=0.1)],
    urls_namespace="mcp_small",
)
owner_cap_server = McpServer(
    tools=task_tools,
    extension_plugins=[McpTasks(max_tasks=5, max_tasks_per_owner=2, bind=tenant)],
    urls_namespace="mcp_owner_cap",
)
principal_server = McpServer(tools=task_tools, extension_plugins=[McpTasks()], auth=TokenAuth(), urls_namespace="mcp_p")
cap_server = McpServer(  # the server's own cap, raced by many workers' callers: no per-caller cap
    tools=task_tools,
    extension_plugins=[McpTasks(max_tasks=25, max_tasks_per_owner=None, ttl_seconds=120)],
    urls_namespace="mcp_cap",
)
fair_server = McpServer(  # the default per-caller cap: a tenth of max_tasks, at least 10
    tools=task_tools, extension_plugins=[McpTasks(max_tasks=25, ttl_seconds=120)], urls_namespace="mcp_fair"
)


@task_tools.register(task_support="required", run_body_as_task=False)
async def ask_then_task(request: McpRequest) -> Any:
    """MRTR rounds first, synchronously; only then the task."""
    answers = await request.aask(
        {"name": elicit("Name?", {"type": "object", "properties": {"name": {"type": "string"}}})}
    )
    name = (answers["name"].content or {}).get("name")

    async def run(task: TaskContext) -> str:
        return f"Hello {name}"

    return await astart_task(request, run=run)


@task_tools.register
async def toggle_tool(request: McpRequest) -> str:
    """Changes this server's tool list (adds and removes a tool): listen streams in every process hear it."""

    def scratch(request: McpRequest) -> str:
        return "scratch"

    task_tools.register(scratch, name="scratch_tool")
    task_tools.unregister("scratch_tool")
    return "toggled"


async def stop_all_tasks() -> None:
    """Stop every task runner of every server in this process (between tests)."""
    for server in list(servers):
        for plugin in server.extension_plugins:
            if isinstance(plugin, McpTasks):
                await plugin.shutdown(0)
