"""Drive a django-mcp server with the official Python SDK client (``mcp`` 2.x).

``<venv python> py_client.py URL --mode legacy|auto``

Runs in the SDK's own venv (see ``install.py``), so it imports nothing from
this repository. ``Client(url, mode=...)``: ``"legacy"`` forces the
``initialize`` handshake (2025-11-25), ``"auto"`` probes ``server/discover``
and adopts 2026-07-28 when the server answers it (falling back to the
handshake otherwise). Steps: connect, ``tools/list``, ``tools/call echo
{"text": "hi"}``, then an elicitation round trip through ``test_elicitation``
(a server→client ``elicitation/create`` in the handshake era, an MRTR
``input_required`` round in 2026-07-28; the SDK answers both through
``elicitation_callback``). ``--expect-version`` makes the negotiated version a
step of its own. Prints one JSON summary on stdout; exit code 0 = every step passed.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import traceback
from collections.abc import Awaitable, Callable
from importlib.metadata import version
from typing import Any

import anyio
import mcp.types as types
from mcp import Client

ANSWER = {"username": "alice", "email": "alice@example.com"}


class StepFailed(Exception):
    pass


def text_of(result: types.CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, types.TextContent))


async def drive(url: str, mode: str, expect_version: str | None, summary: dict[str, Any]) -> None:
    with anyio.fail_after(60):
        await _drive(url, mode, expect_version, summary)


async def _drive(url: str, mode: str, expect_version: str | None, summary: dict[str, Any]) -> None:
    elicitations: list[dict[str, Any]] = []

    async def on_elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        elicitations.append(params.model_dump(mode="json", by_alias=True, exclude_none=True))
        return types.ElicitResult(action="accept", content=ANSWER)

    async def step(name: str, body: Callable[[], Awaitable[dict[str, Any]]]) -> None:
        started = time.monotonic()
        summary["failed_step"] = name
        detail = await body()
        summary["steps"][name] = {"ok": True, "ms": round((time.monotonic() - started) * 1000), **detail}

    client = Client(url, mode=mode, elicitation_callback=on_elicit, read_timeout_seconds=20)
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
            for wanted in ("echo", "test_elicitation"):
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

        if expect_version is not None:
            await step("negotiated_version", negotiated)
        await step("list_tools", list_tools)
        await step("call_echo", call_echo)
        await step("elicitation", elicitation)
    del summary["failed_step"]
    summary["ok"] = True


def first_error(exc: BaseException) -> BaseException:
    """The first leaf of an exception group (anyio wraps errors raised inside the client's task group)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("url")
    parser.add_argument("--mode", choices=("legacy", "auto"), required=True)
    parser.add_argument("--expect-version", help="fail unless this protocol version is negotiated")
    args = parser.parse_args()
    summary: dict[str, Any] = {
        "client": "mcp",
        "version": version("mcp"),
        "mode": args.mode,
        "url": args.url,
        "steps": {},
        "ok": False,
    }
    try:
        anyio.run(drive, args.url, args.mode, args.expect_version, summary)
    except BaseException as exc:  # noqa: BLE001 - every failure ends up in the summary
        error = first_error(exc)
        error_data = getattr(error, "error", None)  # an MCPError carries the JSON-RPC error
        summary["error"] = f"{type(error).__name__}: {getattr(error_data, 'message', None) or error}"
        if error_data is not None:
            summary["error_code"] = getattr(error_data, "code", None)
        summary["traceback"] = traceback.format_exception(error)[-3:]
    sys.stdout.write(json.dumps(summary) + "\n")
    return 0 if summary["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
