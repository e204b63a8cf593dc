"""Drive a django-mcp server's tasks extension with FastMCP's client and fastmcp-tasks.

``<venv python> fastmcp_client.py URL``

Runs in the fastmcp venv (see ``install.py``), so it imports nothing from this
repository. Importing ``fastmcp_tasks`` makes every FastMCP ``Client`` declare
the tasks extension (``io.modelcontextprotocol/tasks``, 2026-07-28 only).
Steps: connect (``mode="auto"``, must negotiate 2026-07-28), ``render``
started as a task with ``call_tool_task`` and resolved to completion
(``tasks/get`` polling), ``render`` called plainly (the client resolves the
task transparently), and a long ``render`` task cancelled with
``tasks/cancel`` that must settle as ``cancelled``. Prints one JSON summary on
stdout; exit code 0 = every step passed.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import Awaitable, Callable
from importlib.metadata import version
from typing import Any

import fastmcp_tasks  # noqa: F401 - registers the tasks extension on every Client
from fastmcp import Client
from fastmcp_tasks import call_tool_task
from script_summary import run_and_report

MODERN = "2026-07-28"


class StepFailed(Exception):
    pass


def text_of(result: Any) -> str:
    return "\n".join(getattr(block, "text", "") for block in result.content if getattr(block, "type", "") == "text")


async def drive(url: str, summary: dict[str, Any]) -> None:
    async def step(name: str, body: Callable[[], Awaitable[dict[str, Any]]]) -> None:
        started = time.monotonic()
        summary["failed_step"] = name
        detail = await body()
        summary["steps"][name] = {"ok": True, "ms": round((time.monotonic() - started) * 1000), **detail}

    summary["failed_step"] = "connect"
    started = time.monotonic()
    async with Client(url, mode="auto", timeout=30) as client:
        negotiated = client.session.protocol_version
        summary["steps"]["connect"] = {"ok": True, "ms": round((time.monotonic() - started) * 1000)}
        summary["steps"]["connect"]["protocolVersion"] = negotiated

        async def modern() -> dict[str, Any]:
            if negotiated != MODERN:
                raise StepFailed(f"negotiated {negotiated}: tasks need {MODERN}")
            return {}

        async def task_to_completion() -> dict[str, Any]:
            task = await call_tool_task(client, "render", {"scene": "intro", "frames": 3})
            created = task.create_result
            result = await asyncio.wait_for(task.result(), 20)
            text = text_of(result)
            if "Rendered 'intro' (3 frames)." not in text:
                raise StepFailed(f"unexpected task result: {text!r}")
            final = await task.status()
            if final.status != "completed":
                raise StepFailed(f"tasks/get after the result says {final.status!r}")
            return {"taskId": task.task_id, "createdStatus": created.status, "text": text}

        async def transparent_task() -> dict[str, Any]:
            result = await client.call_tool("render", {"scene": "auto", "frames": 2})
            text = text_of(result)
            if "Rendered 'auto' (2 frames)." not in text:
                raise StepFailed(f"unexpected result: {text!r}")
            return {"text": text}

        async def cancel_task() -> dict[str, Any]:
            task = await call_tool_task(client, "render", {"scene": "long", "frames": 1000})  # ~50 s of work
            await task.cancel()
            final = await task.wait(timeout=15)
            if final.status != "cancelled":
                raise StepFailed(f"the cancelled task ended {final.status!r}")
            return {"taskId": task.task_id, "status": final.status}

        await step("negotiated_version", modern)
        await step("task_to_completion", task_to_completion)
        await step("transparent_task", transparent_task)
        await step("cancel_task", cancel_task)
    del summary["failed_step"]
    summary["ok"] = True


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("url")
    args = parser.parse_args()
    summary: dict[str, Any] = {
        "client": "fastmcp",
        "version": version("fastmcp"),
        "fastmcp_tasks": version("fastmcp-tasks"),
        "mcp": version("mcp"),
        "url": args.url,
        "steps": {},
        "ok": False,
    }
    return run_and_report(summary, lambda: asyncio.run(asyncio.wait_for(drive(args.url, summary), 90)))


if __name__ == "__main__":
    sys.exit(main())
