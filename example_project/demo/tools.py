"""Demo tools: text, who you are, structured output, a slow one that reports progress, and two task tools."""

import asyncio
from collections import Counter

from django_mcp import McpRequest, elicit, tool
from django_mcp.tasks import TaskRequest


@tool(title="Echo", annotations={"readOnlyHint": True})
def echo(request: McpRequest, text: str, times: int = 1) -> str:
    """Repeat the text."""
    return " ".join([text] * times)


@tool(title="Who am I", annotations={"readOnlyHint": True})
def whoami(request: McpRequest) -> str:
    """Say whom this server takes you for (the signed-in user under DJANGO_MCP_OAUTH=1)."""
    user = request.user
    return user.get_username() if user is not None and user.is_authenticated else "anonymous"


WORD_STATS_SCHEMA = {
    "type": "object",
    "properties": {
        "words": {"type": "integer"},
        "unique": {"type": "integer"},
        "most_common": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["words", "unique", "most_common"],
}


def word_stats(request: McpRequest, text: str) -> dict:
    """Count the words of a text (structured output)."""
    words = text.lower().split()
    return {
        "words": len(words),
        "unique": len(set(words)),
        "most_common": [w for w, _ in Counter(words).most_common(3)],
    }


@tool(title="Slow job")
async def slow_job(request: McpRequest, steps: int = 5, delay_ms: int = 200) -> str:
    """Work in steps, reporting progress after each (send a progressToken to see it)."""
    for step in range(1, steps + 1):
        await asyncio.sleep(delay_ms / 1000)
        request.progress(step, total=steps, message=f"Step {step}/{steps}")
    return f"Done after {steps} steps."


# -- tasks ---------------------------------------------------------------------------
# Both run on the server of example_project/urls.py, which installs the tasks extension (McpTasks).


async def render_frame(scene: str, frame: int) -> None:
    await asyncio.sleep(0.5)  # stands in for real work: 100 frames take 50 s


@tool(
    title="Render a scene",
    task_support="optional",  # "forbidden" (default), "optional", "required"
    task_status_message="Queued",  # the handle's first statusMessage
)
async def render(request: TaskRequest, scene: str, frames: int = 100) -> str:
    """Render a scene frame by frame: as a task (pollable, cancellable) when the client supports tasks."""
    # Declared the extension? This body runs as the task, in the background: request.task is set.
    # Otherwise it runs in the request, request.task is None (a "required" tool refuses -32021).
    for frame in range(1, frames + 1):
        await render_frame(scene, frame)  # a cancelled task is cancelled at its next await
        if request.task is not None:
            await request.task.aupdate(f"Frame {frame}/{frames}")  # statusMessage: its progress channel
    return f"Rendered {scene!r} ({frames} frames)."


CONFIRM = {
    "type": "object",
    "properties": {"confirm": {"type": "boolean", "title": "Really delete everything?"}},
    "required": ["confirm"],
}


@tool(title="Delete everything", task_support="required", annotations={"destructiveHint": True})
async def delete_everything(request: TaskRequest) -> str:
    """Pretend to delete everything, after asking for confirmation mid-task."""
    assert request.task is not None  # "required": only a client that declared the extension gets here
    await request.task.aupdate("Waiting for confirmation")
    # The task waits in input_required until the client answers with tasks/update.
    answers = await request.aask({"confirm": elicit("This deletes everything. Go ahead?", CONFIRM)})
    answer = answers["confirm"]  # unvalidated client input
    if answer.action != "accept" or not (answer.content or {}).get("confirm"):
        return "Nothing was deleted."
    for step in range(1, 4):
        await asyncio.sleep(0.2)
        await request.task.aupdate(f"Deleting… {step}/3")
    return "Everything is gone (not really: this is a demo)."


# -- a CPU-heavy task for the worker fleet ---------------------------------------------------

from django.conf import settings  # noqa: E402


@tool(
    title="Crunch numbers",
    task_support="optional",
    # On the fleet when the example runs with DJANGO_MCP_FLEET=1; else in the web process. One line to move.
    task_backend="fleet" if getattr(settings, "FLEET", False) else None,
)
def crunch(request: TaskRequest, n: int = 2_000_000) -> str:
    """Sum the squares below n (CPU-bound), as a task when the client supports tasks."""
    total = 0
    for i in range(n):
        total += i * i
        if request.task is not None and i % 500_000 == 0:
            if request.task.cancelled:
                return "Cancelled."
            request.task.update(f"{i:,} of {n:,}")
    return f"The sum of the squares below {n:,} is {total:,}."
