"""``completion/complete`` for prompt arguments and resource template variables."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ...protocol.errors import invalid_params
from ..access import avisible
from ..handlers import arun_handler
from ..params import CompleteParams
from ..request import McpRequest
from ..resources.definition import ResourceTemplate

if TYPE_CHECKING:
    from ..context import ServerContext

_MAX_COMPLETIONS = 100


async def complete(context: ServerContext, request: McpRequest, params: CompleteParams) -> dict[str, Any]:
    """``completion/complete``: the completer's values for one argument, at most 100."""
    ref = params.ref
    reference = ref.model_dump(exclude_none=True)
    completers: Mapping[str, Any]
    if ref.type == "ref/prompt":
        found_prompt = context.prompts.get(ref.name or "")
        if found_prompt is None or not await avisible(request, [found_prompt]):
            raise invalid_params(f"Unknown prompt: {ref.name}", {"ref": reference})
        completers = found_prompt.completers
    else:
        found = context.resources.get(ref.uri or "")
        if not isinstance(found, ResourceTemplate) or not await avisible(request, [found]):
            raise invalid_params(f"Unknown resource template: {ref.uri}", {"ref": reference})
        completers = found.completers
    completer = completers.get(params.argument.name)
    values: list[str] = []
    if completer is not None:
        known = params.context.arguments if params.context is not None else {}
        suggestions = await arun_handler("Completer", completer, request, params.argument.value, known)
        values = [str(v) for v in suggestions]
    return {
        "completion": {
            "values": values[:_MAX_COMPLETIONS],
            "total": len(values),
            "hasMore": len(values) > _MAX_COMPLETIONS,
        }
    }
