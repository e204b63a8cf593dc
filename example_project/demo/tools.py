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
