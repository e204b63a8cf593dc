"""A server whose declarative task tools run on the worker fleet (mounted at /mcp-fleet/)."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

from django_mcp import McpServer, ToolRegistry, elicit, publish_ninja, publish_query
from django_mcp.tasks import McpTasks, TaskRequest, current_task
from tests.publishapp.api import api as publish_api
from tests.publishapp.models import Book

fleet_tools = ToolRegistry(name="fleet")
FORM = {"type": "object", "properties": {"ok": {"type": "boolean"}}}


def marks() -> Path:
    """Where bodies leave marks (started, cancelled) for the tests to read: any process, one directory."""
    return Path(os.environ.get("FLEET_MARKS", "/tmp/django-mcp-fleet-marks"))


def mark(task_id: str, what: str) -> None:
    marks().mkdir(parents=True, exist_ok=True)
    (marks() / f"{task_id}.{what}").write_text(f"{time.time()} {os.getpid()}")


@fleet_tools.register(task_support="required")
async def heavy(request: TaskRequest, text: str = "x") -> str:
    """Two steps around a question to the client."""
    task = current_task(request)
    assert task is not None
    mark(task.id, "started")
    await task.aupdate(f"step 1 of 2 on {os.getpid()}")
    answers = await request.aask({"ok": elicit("Go on?", FORM)})
    await task.aupdate("step 2 of 2")
    await asyncio.sleep(0.3)
    return f"heavy {text} pid={os.getpid()} answered={answers['ok'].action}"


@fleet_tools.register(task_support="required")
async def sleeper(request: TaskRequest, seconds: float = 60) -> str:
    task = current_task(request)
    assert task is not None
    mark(task.id, "started")
    try:
        await asyncio.sleep(seconds)
    except asyncio.CancelledError:
        mark(task.id, "cancelled")
        raise
    return "slept"


@fleet_tools.register(task_support="required", task_backend="fleet")
def sync_sleeper(request: TaskRequest, seconds: float = 60) -> str:
    """A plain def body: checks task.cancelled (the SIGTERM grace sets it)."""
    task = request.task
    assert task is not None
    mark(task.id, "started")
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if task.cancelled:
            mark(task.id, "cancelled")
            return "stopped early"
        time.sleep(0.05)
    return "slept"


@fleet_tools.register(task_support="required")
async def whoami(request: TaskRequest) -> dict:
    """What the rebuilt request carries on the worker."""
    return {
        "user": getattr(request.user, "username", None) or "",
        "capabilities": sorted(request.client_capabilities),
        "protocolVersion": request.meta.protocol_version,
        "pid": os.getpid(),
    }


@fleet_tools.register(task_support="required", task_timeout_seconds=0.2)
async def bounded(request: TaskRequest, seconds: float = 5) -> str:
    """A body over its time limit: the worker fails it "Task timed out"."""
    await asyncio.sleep(seconds)
    return "done"


# Published operations run on the fleet like hand-written bodies (the worker imports the same URLconf).
publish_ninja(publish_api, "whoami", registry=fleet_tools, prefix="fleet_", task_support="required")
publish_query(Book, name="fleet_titles", fields={"title": ["icontains"]}, registry=fleet_tools, task_support="required")

fleet_server = McpServer(
    tools=fleet_tools,
    extension_plugins=[
        McpTasks(
            # The live fleet test's rq leg starts its web processes with "rq" (a TASKS alias then).
            task_backend=os.environ.get("DJANGO_MCP_TEST_FLEET_BACKEND", "fleet"),
            task_queue="mcp",
            bind=lambda r: r.headers.get("x-tenant", "anon"),
            poll_interval_seconds=0.5,
        )
    ],
    urls_namespace="mcp_fleet",
)
