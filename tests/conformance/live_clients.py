"""Tools the real-client harness (``tests/live/test_clients.py``) calls on this fixture project.

The official clients (TypeScript SDK 1.x, the Python SDK ``mcp``, FastMCP with
fastmcp-tasks) are driven against this project because it has every fixture
they need in one server: ``echo`` and ``render`` below (the same shape as the
example project's), ``test_elicitation`` (``legacy_fixtures.py``) for an
elicitation round trip, and the tasks extension (``urls.py``). The conformance
suite never calls these two; listing them changes no check.
"""

from __future__ import annotations

import asyncio
from typing import Any

from django_mcp import McpRequest, tool
from django_mcp.tasks import TaskContext, astart_task

FRAME_SECONDS = 0.05


@tool(title="Echo", annotations={"readOnlyHint": True})
def echo(request: McpRequest, text: str, times: int = 1) -> str:
    """Repeat the text."""
    return " ".join([text] * times)


@tool(title="Render a scene", task_support="optional")
async def render(request: McpRequest, scene: str, frames: int = 100) -> Any:
    """Render a scene frame by frame (50 ms each): a task when the client declared the tasks extension."""

    async def run(task: TaskContext) -> str:
        for frame in range(1, frames + 1):
            await asyncio.sleep(FRAME_SECONDS)  # a cancelled task stops at its next await
            await task.aupdate(f"Frame {frame}/{frames}")
        return f"Rendered {scene!r} ({frames} frames)."

    return await astart_task(request, run=run, status_message="Queued")
