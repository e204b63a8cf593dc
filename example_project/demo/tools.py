"""Demo tools: a text tool, one with structured output, and a slow one that reports progress."""

import asyncio
from collections import Counter

from django_mcp import McpRequest, tool


@tool(title="Echo", annotations={"readOnlyHint": True})
def echo(request: McpRequest, text: str, times: int = 1) -> str:
    """Repeat the text."""
    return " ".join([text] * times)


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

from django_mcp import elicit  # noqa: E402
from django_mcp.tasks import TaskContext, astart_task, can_create_task  # noqa: E402

FRAMES = 100


async def render_frame(scene: str, frame: int) -> None:
    await asyncio.sleep(0.05)  # stands in for real work


@tool(title="Render a scene", task_support="optional")
async def render(request: McpRequest, scene: str, frames: int = FRAMES) -> str | dict:
    """Render a scene frame by frame: as a task (pollable, cancellable) when the client supports tasks."""
    if not can_create_task(request):
        for frame in range(1, frames + 1):
            await render_frame(scene, frame)
        return f"Rendered {scene!r} ({frames} frames)."

    async def run(task: TaskContext) -> str:
        for frame in range(1, frames + 1):
            await render_frame(scene, frame)  # a cancelled task stops at its next await
            await task.aupdate(f"Frame {frame}/{frames}")
        return f"Rendered {scene!r} ({frames} frames)."

    return await astart_task(request, run=run, status_message="Queued")


CONFIRM = {
    "type": "object",
    "properties": {"confirm": {"type": "boolean", "title": "Really delete everything?"}},
    "required": ["confirm"],
}


@tool(title="Delete everything", task_support="required", annotations={"destructiveHint": True})
async def delete_everything(request: McpRequest) -> dict:
    """Pretend to delete everything, after asking for confirmation mid-task."""

    async def run(task: TaskContext) -> str:
        await task.aupdate("Waiting for confirmation")
        answers = await task.arequest_input({"confirm": elicit("This deletes everything. Go ahead?", CONFIRM)})
        answer = answers["confirm"]  # unvalidated client input
        if answer.action != "accept" or not (answer.content or {}).get("confirm"):
            return "Nothing was deleted."
        for step in range(1, 4):
            await asyncio.sleep(0.2)
            await task.aupdate(f"Deleting… {step}/3")
        return "Everything is gone (not really: this is a demo)."

    return await astart_task(request, run=run, status_message="Starting")
