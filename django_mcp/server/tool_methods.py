"""``tools/list`` and ``tools/call``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.db import InterfaceError, OperationalError

from ..protocol.errors import McpJsonRpcError, invalid_params
from ..protocol.headers import check_param_headers
from .context import McpRequest
from .handlers import call_handler
from .mrtr import InputRequired
from .results import call_tool_result, exception_result

if TYPE_CHECKING:
    from .server import McpServer


async def list_tools(server: McpServer, request: McpRequest) -> dict[str, Any]:
    """``tools/list``: one page of tools, in registration order."""
    return server.page(request, "tools", [t.to_wire() for t in server.tools])


async def call_tool(server: McpServer, request: McpRequest) -> dict[str, Any]:
    """``tools/call``: headers, the extensions' gates, argument validation, then the handler."""
    name = request.params.get("name")
    if not isinstance(name, str):
        raise invalid_params("Invalid params: tools/call needs a string 'name'")
    tool = server.tools.get(name)
    if tool is None:
        raise invalid_params(f"Unknown tool: {name}", {"tool": name})
    for plugin in server.extension_plugins:
        if plugin.enabled(request.http_request):
            plugin.check_tool_call(request, tool)
    arguments = request.params.get("arguments")
    if tool.param_headers:
        check_param_headers(tool.param_headers, arguments if isinstance(arguments, dict) else {}, request.headers)
    kwargs = tool.validate_arguments(arguments)
    try:
        value = await call_handler(tool.handler, request, **kwargs)
    except (McpJsonRpcError, InputRequired, OperationalError, InterfaceError):
        raise  # a lost database is the server's problem (503), not the tool's
    except Exception as exc:
        return exception_result(tool, exc)
    return call_tool_result(tool, value)
