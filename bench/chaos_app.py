"""The chaos harness's server: tools whose outcome a client knows from its arguments, in the web process or
on the worker fleet, mounted beside the test project's URLs (``ROOT_URLCONF = "bench.chaos_app"``)."""

from __future__ import annotations

import asyncio
from typing import Any

from django.urls import path

from django_mcp import McpRequest, McpServer, ToolRegistry, elicit
from django_mcp.tasks import McpTasks, TaskRequest, current_task
from tests.urls import urlpatterns as test_urlpatterns

chaos_tools = ToolRegistry(name="chaos")
FORM = {"type": "object", "properties": {"word": {"type": "string"}}, "required": ["word"]}


@chaos_tools.register
def add(request: McpRequest, a: int, b: int) -> int:
    """A plain call: no task, no database."""
    return a + b


@chaos_tools.register(task_support="required")
async def work(request: TaskRequest, key: str, seconds: float = 2, steps: int = 4) -> str:
    """Runs in the web process that took the call, reporting progress."""
    task = current_task(request)
    assert task is not None
    for step in range(1, steps + 1):
        await asyncio.sleep(seconds / steps)
        await task.aupdate(f"step {step} of {steps}")
    return f"work:{key}"


@chaos_tools.register(task_support="required")
async def ask(request: TaskRequest, key: str, seconds: float = 1) -> str:
    """Asks the client mid-flight (the task waits in input_required), then finishes."""
    await asyncio.sleep(seconds / 2)
    answers = await request.aask({"word": elicit(f"The word for {key}?", FORM)})
    word = (answers["word"].content or {}).get("word")
    await asyncio.sleep(seconds / 2)
    return f"ask:{key}:{word}"


def _on_a_worker(name: str) -> Any:
    async def body(request: TaskRequest, key: str, seconds: float = 2) -> str:
        """Runs on a worker of the fleet."""
        await asyncio.sleep(seconds)
        return f"{name}:{key}"

    return body


# The same body on each fleet the harness runs: django_tasks_db's workers (mcp_db_worker), RQ and Celery.
FLEETS = {"fleet": "fleet", "fleet_rq": "rq", "fleet_celery": "celery"}
for _name, _backend in FLEETS.items():
    chaos_tools.register(_on_a_worker(_name), name=_name, task_support="required", task_backend=_backend)


def _principal(http: Any) -> str:
    return str(http.headers.get("x-tenant", "anon"))


chaos_server = McpServer(
    tools=chaos_tools,
    extension_plugins=[
        # No cap in practice: a long run retains more tasks than the default max_tasks.
        McpTasks(
            bind=_principal, task_queue="mcp", max_tasks=1_000_000, max_tasks_per_owner=None, poll_interval_seconds=0.5
        )
    ],
    urls_namespace="mcp_chaos",
)

urlpatterns = [*test_urlpatterns, path("mcp-chaos", chaos_server.urls)]
