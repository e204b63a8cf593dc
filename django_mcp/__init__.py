"""django-mcp: serve the Model Context Protocol (2026-07-28) from a Django project.

Register tools in your app's ``AppConfig.ready()``::

    from django_mcp import tool

    @tool(description="Add two numbers")
    def add(request, a: int, b: int) -> int:
        return a + b

and mount the endpoint in ``urls.py``: ``path("mcp/", include("django_mcp.urls"))``,
or ``path("mcp/", McpServer(...).urls)`` for a server of your own.
"""

from __future__ import annotations

from .protocol.errors import McpJsonRpcError
from .server.context import McpRequest
from .server.extensions import ExtensionMethod, ExtensionPlugin
from .server.options import ServerOptions
from .server.registry import ToolRegistry, registry, tool
from .server.results import ToolError
from .server.server import McpServer
from .server.tools import Tool

__version__ = "0.1.0"

__all__ = [
    "ExtensionMethod",
    "ExtensionPlugin",
    "McpJsonRpcError",
    "McpRequest",
    "McpServer",
    "ServerOptions",
    "Tool",
    "ToolError",
    "ToolRegistry",
    "__version__",
    "registry",
    "tool",
]
