"""Drive a django-mcp server with the official Python SDK client (``mcp`` 2.x).

``<venv python> py_client.py URL|stdio --mode legacy|auto [--skip-elicitation] [--task-tools [--required-tool NAME]]``

Runs in the SDK's own venv (see ``install.py``), so it imports nothing from
this repository. ``stdio`` instead of a URL starts the server the SDK's stdio client way, from the
command in ``$DJANGO_MCP_STDIO`` (JSON: ``command``, ``args``, ``cwd``, ``env``).
``Client(url, mode=...)``: ``"legacy"`` forces the ``initialize`` handshake (2025-11-25),
``"auto"`` probes ``server/discover`` and adopts 2026-07-28 when the server answers it (falling back to the
handshake otherwise). Steps: connect, ``tools/list``, ``tools/call echo
{"text": "hi"}``, then an elicitation round trip through ``test_elicitation``
(a server→client ``elicitation/create`` in the handshake era, an MRTR
``input_required`` round in 2026-07-28; the SDK answers both through
``elicitation_callback``; ``--skip-elicitation`` leaves it out, for a server
without ``test_elicitation`` such as the example project). ``--expect-version``
makes the negotiated version a step of its own. ``--task-tools`` adds the task
tools, for the handshake era (``--mode legacy``): ``render {"scene": "x",
"frames": 2}`` (``task_support="optional"``: without the tasks extension it must
run in the request and answer the plain text result) and the "required" tool
(``delete_everything``, or ``--required-tool NAME``), which must be refused with
the JSON-RPC error -32021 naming ``io.modelcontextprotocol/tasks``; a failure of
either is recorded and the next step still runs. Prints one JSON summary on
stdout; exit code 0 = every step passed.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Awaitable, Callable
from importlib.metadata import version
from typing import Any

import anyio
import mcp.types as types
from mcp import Client, MCPError
from script_summary import run_and_report

ANSWER = {"username": "alice", "email": "alice@example.com"}
EXTENSION = "io.modelcontextprotocol/tasks"
RENDERED = "Rendered 'x' (2 frames)."
TASK_REQUIRED = -32021


class StepFailed(Exception):
    def __init__(self, message: str, detail: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.detail = detail or {}


def text_of(result: types.CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, types.TextContent))


async def drive(
    url: str, mode: str, expect_version: str | None, summary: dict[str, Any], options: argparse.Namespace
) -> None:
    with anyio.fail_after(60):
        await _drive(url, mode, expect_version, summary, options)


async def _drive(
    url: str, mode: str, expect_version: str | None, summary: dict[str, Any], options: argparse.Namespace
) -> None:
    elicitations: list[dict[str, Any]] = []

    async def on_elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        elicitations.append(params.model_dump(mode="json", by_alias=True, exclude_none=True))
        return types.ElicitResult(action="accept", content=ANSWER)

    async def step(name: str, body: Callable[[], Awaitable[dict[str, Any]]]) -> None:
        started = time.monotonic()
        summary["failed_step"] = name
        detail = await body()
        summary["steps"][name] = {"ok": True, "ms": round((time.monotonic() - started) * 1000), **detail}

    async def soft_step(name: str, body: Callable[[], Awaitable[dict[str, Any]]]) -> None:
        """A step whose StepFailed is recorded (the first in failed_step / error) while the run goes on."""
        started = time.monotonic()
        summary["failed_step"] = name
        try:
            detail = await body()
        except StepFailed as exc:
            ms = round((time.monotonic() - started) * 1000)
            summary["steps"][name] = {"ok": False, "ms": ms, "error": str(exc), **exc.detail}
            soft_failures.append((name, str(exc)))
            return
        summary["steps"][name] = {"ok": True, "ms": round((time.monotonic() - started) * 1000), **detail}

    soft_failures: list[tuple[str, str]] = []

    client = Client(_target(url), mode=mode, elicitation_callback=on_elicit, read_timeout_seconds=20)
    started = time.monotonic()
    summary["failed_step"] = "connect"
    async with client:
        info = client.server_info
        summary["steps"]["connect"] = {
            "ok": True,
            "ms": round((time.monotonic() - started) * 1000),
            "protocolVersion": client.protocol_version,
            "server": info.model_dump(mode="json", exclude_none=True) if info is not None else None,
        }

        async def negotiated() -> dict[str, Any]:
            if client.protocol_version != expect_version:
                raise StepFailed(f"negotiated {client.protocol_version}, expected {expect_version}")
            return {}

        async def list_tools() -> dict[str, Any]:
            names = [tool.name for tool in (await client.list_tools()).tools]
            wanted_tools = ["echo"]
            if not options.skip_elicitation:
                wanted_tools.append("test_elicitation")
            if options.task_tools:
                wanted_tools += ["render", options.required_tool]
            for wanted in wanted_tools:
                if wanted not in names:
                    raise StepFailed(f"{wanted} is not listed (got {', '.join(names)})")
            return {"count": len(names)}

        async def call_echo() -> dict[str, Any]:
            result = await client.call_tool("echo", {"text": "hi"})
            if result.is_error or text_of(result) != "hi":
                raise StepFailed(f'expected the text "hi", got {result.model_dump(mode="json")}')
            return {"text": text_of(result)}

        async def elicitation() -> dict[str, Any]:
            result = await client.call_tool("test_elicitation", {"message": "Who are you?"})
            text = text_of(result)
            if len(elicitations) != 1:
                raise StepFailed(f"expected 1 elicitation, got {len(elicitations)}")
            if result.is_error or ANSWER["username"] not in text or ANSWER["email"] not in text:
                raise StepFailed(f"the tool result does not carry the answer: {result.model_dump(mode='json')}")
            return {"text": text, "message": elicitations[0].get("message")}

        async def call_render() -> dict[str, Any]:
            result = await client.call_tool("render", {"scene": "x", "frames": 2})
            detail = {"isError": bool(result.is_error), "text": text_of(result)}
            if result.is_error or text_of(result) != RENDERED:
                raise StepFailed(f"expected the text {RENDERED!r}, got {result.model_dump(mode='json')}", detail)
            return detail

        async def call_task_required() -> dict[str, Any]:
            tool = options.required_tool
            try:
                result = await client.call_tool(tool, {})
            except MCPError as exc:
                detail = {"tool": tool, "code": exc.code, "message": exc.message, "data": exc.data}
                if exc.code != TASK_REQUIRED or EXTENSION not in exc.message:
                    raise StepFailed(
                        f"expected error {TASK_REQUIRED} naming {EXTENSION}, got {exc.code}: {exc.message}", detail
                    ) from exc
                return detail
            detail = {"tool": tool, "isError": bool(result.is_error), "text": text_of(result)}
            raise StepFailed(f"expected error {TASK_REQUIRED}, got the result {result.model_dump(mode='json')}", detail)

        if expect_version is not None:
            await step("negotiated_version", negotiated)
        await step("list_tools", list_tools)
        await step("call_echo", call_echo)
        if not options.skip_elicitation:
            await step("elicitation", elicitation)
        if options.task_tools:
            await soft_step("call_render", call_render)
            await soft_step("call_task_required", call_task_required)
    del summary["failed_step"]
    if soft_failures:
        summary["failed_step"], summary["error"] = soft_failures[0][0], f"StepFailed: {soft_failures[0][1]}"
        return
    summary["ok"] = True


def _target(url: str) -> Any:
    """A URL, or for ``stdio`` the command in ``$DJANGO_MCP_STDIO`` (JSON: command, args, cwd, env) to start."""
    if url != "stdio":
        return url
    from mcp.client.stdio import StdioServerParameters

    return StdioServerParameters(**json.loads(os.environ["DJANGO_MCP_STDIO"]))


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("url")
    parser.add_argument("--mode", choices=("legacy", "auto"), required=True)
    parser.add_argument("--expect-version", help="fail unless this protocol version is negotiated")
    parser.add_argument("--skip-elicitation", action="store_true", help="leave out the test_elicitation step")
    parser.add_argument("--task-tools", action="store_true", help="call render and the task-required tool too")
    parser.add_argument("--required-tool", default="delete_everything", help="the task_support='required' tool")
    args = parser.parse_args()
    summary: dict[str, Any] = {
        "client": "mcp",
        "version": version("mcp"),
        "mode": args.mode,
        "url": args.url,
        "steps": {},
        "ok": False,
    }
    return run_and_report(summary, lambda: anyio.run(drive, args.url, args.mode, args.expect_version, summary, args))


if __name__ == "__main__":
    sys.exit(main())
