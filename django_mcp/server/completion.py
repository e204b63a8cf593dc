"""``completion/complete`` for prompt arguments and resource template variables."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..protocol.errors import invalid_params
from .context import McpRequest
from .handlers import run_handler
from .resources import ResourceTemplate

if TYPE_CHECKING:
    from .server import McpServer

_MAX_COMPLETIONS = 100


async def complete(server: McpServer, request: McpRequest) -> dict[str, Any]:
    """``completion/complete``: the completer's values for one argument, at most 100."""
    ref, argument = request.params.get("ref"), request.params.get("argument")
    if not isinstance(ref, dict) or not isinstance(argument, dict) or not isinstance(argument.get("name"), str):
        raise invalid_params("Invalid params: completion/complete needs 'ref' and 'argument' {name, value}")
    completers: Mapping[str, Any]
    if ref.get("type") == "ref/prompt":
        found_prompt = server.prompts.get(ref.get("name", ""))
        if found_prompt is None:
            raise invalid_params(f"Unknown prompt: {ref.get('name')}", {"ref": ref})
        completers = found_prompt.completers
    elif ref.get("type") == "ref/resource":
        found = server.resources.get(ref.get("uri", ""))
        if not isinstance(found, ResourceTemplate):
            raise invalid_params(f"Unknown resource template: {ref.get('uri')}", {"ref": ref})
        completers = found.completers
    else:
        raise invalid_params("Invalid params: ref.type must be 'ref/prompt' or 'ref/resource'", {"ref": ref})
    completer = completers.get(argument["name"])
    values: list[str] = []
    if completer is not None:
        context = request.params.get("context")
        known = context.get("arguments", {}) if isinstance(context, dict) else {}
        value = argument.get("value", "")
        values = [str(v) for v in await run_handler("Completer", completer, request, value, known)]
    return {
        "completion": {
            "values": values[:_MAX_COMPLETIONS],
            "total": len(values),
            "hasMore": len(values) > _MAX_COMPLETIONS,
        }
    }
