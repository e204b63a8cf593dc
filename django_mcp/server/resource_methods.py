"""``resources/list``, ``resources/templates/list`` and ``resources/read``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..protocol.errors import invalid_params
from .context import McpRequest
from .handlers import run_handler
from .resources import resource_contents

if TYPE_CHECKING:
    from .server import McpServer


async def list_resources(server: McpServer, request: McpRequest) -> dict[str, Any]:
    """``resources/list``: one page of static resources."""
    return server.page(request, "resources", [r.to_wire() for r in server.resources.static()])


async def list_resource_templates(server: McpServer, request: McpRequest) -> dict[str, Any]:
    """``resources/templates/list``: one page of URI templates."""
    return server.page(request, "resourceTemplates", [t.to_wire() for t in server.resources.templates()])


async def read_resource(server: McpServer, request: McpRequest) -> dict[str, Any]:
    """``resources/read``: the static resource, else the first matching template; -32602 with ``data.uri`` if none."""
    uri = request.params.get("uri")
    if not isinstance(uri, str):
        raise invalid_params("Invalid params: resources/read needs a string 'uri'")
    found = server.resources.resolve(uri)
    if found is None:
        raise invalid_params(f"Resource not found: {uri}", {"uri": uri})
    item, variables = found
    value = await run_handler(f"Resource {uri!r}", item.handler, request, **variables)
    return {"contents": resource_contents(uri, item.mime_type, value), **server.cache_hints(request)}
