"""``resources/list``, ``resources/templates/list`` and ``resources/read``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...protocol.errors import invalid_params
from ..access import avisible, log_refusal
from ..handlers import arun_handler
from ..params import ListParams, ReadResourceParams
from ..request import McpRequest
from ..resources.definition import resource_contents

if TYPE_CHECKING:
    from ..context import ServerContext


async def list_resources(context: ServerContext, request: McpRequest, params: ListParams) -> dict[str, Any]:
    """``resources/list``: one page of the static resources the user may read."""
    every = context.resources.static()
    shown = await avisible(request, every)
    return context.page(params, "resources", [r.to_wire() for r in shown], per_user=any(r.permissions for r in every))


async def list_resource_templates(context: ServerContext, request: McpRequest, params: ListParams) -> dict[str, Any]:
    """``resources/templates/list``: one page of the URI templates the user may read."""
    every = context.resources.templates()
    shown = await avisible(request, every)
    wire = [t.to_wire() for t in shown]
    return context.page(params, "resourceTemplates", wire, per_user=any(r.permissions for r in every))


async def read_resource(context: ServerContext, request: McpRequest, params: ReadResourceParams) -> dict[str, Any]:
    """``resources/read``: the static resource, else the first matching template; -32602 with ``data.uri`` if none."""
    uri = params.uri
    found = context.resources.resolve(uri)
    if found is not None and not await avisible(request, [found[0]]):
        log_refusal(request, "resource", uri)
        found = None  # answered as for a resource that does not exist
    if found is None:
        raise invalid_params(f"Resource not found: {uri}", {"uri": uri})
    item, variables = found
    value = await arun_handler(f"Resource {uri!r}", item.handler, request, **variables)
    return {"contents": resource_contents(uri, item.mime_type, value), **context.cache_hints()}
