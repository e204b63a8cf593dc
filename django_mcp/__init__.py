"""django-mcp: serve the Model Context Protocol (2026-07-28) from a Django project.

Register tools, prompts and resources in your app's ``AppConfig.ready()``::

    from django_mcp import tool

    @tool(description="Add two numbers")
    def add(request, a: int, b: int) -> int:
        return a + b

and mount the endpoint in ``urls.py``: ``mcp_path("mcp")`` (``/mcp`` and ``/mcp/``), or
``mcp_path("mcp", McpServer(...))`` for a server of your own. ``django_mcp.testing.McpClient``
calls it from your tests.
"""

from __future__ import annotations

from .asgi import get_asgi_application
from .endpoint import McpServer
from .protocol.errors import McpJsonRpcError
from .publish.drf import publish_drf
from .publish.ninja import publish_ninja
from .publish.queries import publish_query
from .server.definition_errors import DefinitionError
from .server.extensions import ExtensionMethod, ExtensionPlugin, ExtensionResult, ListenSubscription
from .server.listen import close_listen_streams
from .server.mrtr import (
    ElicitAnswer,
    InputRequest,
    RootsAnswer,
    SamplingAnswer,
    elicit,
    elicit_url,
    list_roots,
    sample,
)
from .server.notify import anotify_resource_updated, notify_resource_updated
from .server.options import ServerOptions
from .server.prompts.definition import Prompt, PromptArgument, PromptRegistry, prompt, prompts
from .server.request import McpRequest
from .server.resources.definition import Resource, ResourceRegistry, ResourceTemplate, resource, resources
from .server.results import ToolError
from .server.signals import tool_called
from .server.tools.definition import Tool
from .server.tools.registry import ToolRegistry, registry, tool
from .urls import mcp_path
from .version import __version__

__all__ = [
    "DefinitionError",
    "ElicitAnswer",
    "ExtensionMethod",
    "ExtensionPlugin",
    "ExtensionResult",
    "InputRequest",
    "ListenSubscription",
    "McpJsonRpcError",
    "McpRequest",
    "McpServer",
    "Prompt",
    "PromptArgument",
    "PromptRegistry",
    "Resource",
    "ResourceRegistry",
    "ResourceTemplate",
    "RootsAnswer",
    "SamplingAnswer",
    "ServerOptions",
    "Tool",
    "ToolError",
    "ToolRegistry",
    "__version__",
    "anotify_resource_updated",
    "close_listen_streams",
    "elicit",
    "elicit_url",
    "get_asgi_application",
    "list_roots",
    "mcp_path",
    "notify_resource_updated",
    "prompt",
    "prompts",
    "publish_drf",
    "publish_ninja",
    "publish_query",
    "registry",
    "resource",
    "resources",
    "sample",
    "tool",
    "tool_called",
]
