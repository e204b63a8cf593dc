"""``resources/list``, ``resources/templates/list`` and ``resources/read``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..protocol.errors import invalid_params
from .context import McpRequest
from .handlers import run_handler
from .params import ListParams, ReadResourceParams
from .resources import resource_contents

if TYPE_CHECKING:
    from .dispatch import ServerContext


async def list_resources(context: ServerContext, request: McpRequest, params: ListParams) -> dict[str, Any]:
    """``resources/list``: one page of static resources."""
    return context.page(params, "resources", [r.to_wire() for r in context.resources.static()])


async def list_resource_templates(context: ServerContext, request: McpRequest, params: ListParams) -> dict[str, Any]:
    """``resources/templates/list``: one page of URI templates."""
    return context.page(params, "resourceTemplates", [t.to_wire() for t in context.resources.templates()])


async def read_resource(context: ServerContext, request: McpRequest, params: ReadResourceParams) -> dict[str, Any]:
    """``resources/read``: the static resource, else the first matching template; -32602 with ``data.uri`` if none."""
    uri = params.uri
    found = context.resources.resolve(uri)
    if found is None:
        raise invalid_params(f"Resource not found: {uri}", {"uri": uri})
    item, variables = found
    value = await run_handler(f"Resource {uri!r}", item.handler, request, **variables)
    return {"contents": resource_contents(uri, item.mime_type, value), **context.cache_hints()}
