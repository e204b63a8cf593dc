"""``tools/list`` and ``tools/call``."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable
from functools import partial
from typing import TYPE_CHECKING, Any

from django.db import InterfaceError, OperationalError

from ...protocol.errors import McpJsonRpcError, invalid_params
from ...protocol.headers import check_param_headers
from ..access import avisible, log_refusal, require_scopes
from ..extensions import ExtensionResult, ProceedToolCall
from ..handlers import call_handler
from ..mrtr import InputRequired
from ..params import CallToolParams, ListParams
from ..rates import aenforce_tool_rate
from ..request import McpRequest
from ..results import call_tool_result, exception_result
from ..signals import tool_called
from ..tools.definition import Tool

if TYPE_CHECKING:
    from ..context import ServerContext


async def list_tools(context: ServerContext, request: McpRequest, params: ListParams) -> dict[str, Any]:
    """``tools/list``: one page of tools, in registration order, with the extensions' metadata."""
    entries = []
    shown = await avisible(request, list(context.tools))
    for tool in shown:
        wire = tool.to_wire()
        for plugin in context.plugins:
            plugin.decorate_tool(tool, wire)
        entries.append(wire)
    return context.page(params, "tools", entries, per_user=any(tool.permissions for tool in context.tools))


async def call_tool(context: ServerContext, request: McpRequest, params: CallToolParams) -> dict[str, Any]:
    """``tools/call``: routing headers, argument validation, the extensions' wrappers, then the handler."""
    tool = context.tools.get(params.name)
    if tool is not None and not await avisible(request, [tool]):
        log_refusal(request, "tool", tool.name)
        tool = None  # answered as for a tool that does not exist
    if tool is None:
        raise invalid_params(f"Unknown tool: {params.name}", {"tool": params.name})
    require_scopes(request, tool.scopes)
    if tool.rate_limit is not None:
        await aenforce_tool_rate(request, tool.name, tool.rate_limit)
    if not tool_called.receivers:
        return await _acall(tool, context, request, params)
    started, outcome = time.monotonic(), "refused"
    try:
        result = await _acall(tool, context, request, params)
        outcome = "task" if result.get("resultType") == "task" else "error" if result.get("isError") else "result"
        return result
    except InputRequired:
        outcome = "input_required"
        raise
    except asyncio.CancelledError:
        outcome = "cancelled"  # the client went away
        raise
    finally:
        duration = time.monotonic() - started
        await tool_called.asend(
            sender=Tool, request=request, tool=tool.name, outcome=outcome, duration=duration, definition=tool
        )


async def _acall(tool: Tool, context: ServerContext, request: McpRequest, params: CallToolParams) -> dict[str, Any]:
    if tool.param_headers:
        arguments = params.arguments if isinstance(params.arguments, dict) else {}
        check_param_headers(tool.param_headers, arguments, request.headers)
    kwargs = tool.validate_arguments(params.arguments)
    if tool.single_use_state:
        await request.input_rounds.aconsume()  # a replayed confirmation never reaches the handler

    def invoke(req: McpRequest) -> Awaitable[Any]:
        return call_handler(tool.handler, req, **kwargs)

    proceed: ProceedToolCall = invoke
    for plugin in reversed(context.inactive_plugins):
        proceed = partial(plugin.call_tool_unserved, tool=tool, proceed=proceed)
    for plugin in reversed(context.plugins):
        proceed = partial(plugin.call_tool, tool=tool, proceed=proceed)
    limit = asyncio.timeout(tool.timeout_seconds)  # None: no limit
    try:
        # Around the whole chain: a call answered with a task handle returns at once, and the task's
        # body, run later, is not bound by this.
        async with limit:
            value = await proceed(request)
    except TimeoutError as exc:
        if limit.expired():
            return timed_out(context, tool)
        return exception_result(tool, exc)  # the tool's own TimeoutError (an upstream call's)
    except (McpJsonRpcError, InputRequired, OperationalError, InterfaceError):
        raise  # a lost database is the server's problem (503), not the tool's
    except Exception as exc:
        return exception_result(tool, exc)
    if isinstance(value, ExtensionResult):
        return value.result
    return call_tool_result(tool, value)


def timed_out(context: ServerContext, tool: Tool) -> dict[str, Any]:
    """The error result of a call past the tool's ``timeout_seconds``; it says so, and where the tool can run
    as a task (its listing says ``execution.taskSupport``), how to ask for one."""
    wire = tool.to_wire()
    for plugin in context.plugins:
        plugin.decorate_tool(tool, wire)
    text = f"Tool {tool.name!r} did not finish within its time limit of {tool.timeout_seconds:g} s"
    if wire.get("execution", {}).get("taskSupport") in ("optional", "required"):
        text += "; it can run as a task instead: call it declaring the tasks extension, then poll tasks/get"
    # A sync handler's thread cannot be stopped: it runs to its end, and what it returns is dropped.
    return {"content": [{"type": "text", "text": text}], "isError": True}
