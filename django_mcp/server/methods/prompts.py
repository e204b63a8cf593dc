"""``prompts/list`` and ``prompts/get``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...protocol.errors import invalid_params
from ..access import avisible, log_refusal
from ..handlers import arun_handler
from ..params import GetPromptParams, ListParams
from ..prompts.definition import prompt_result
from ..request import McpRequest

if TYPE_CHECKING:
    from ..context import ServerContext


async def list_prompts(context: ServerContext, request: McpRequest, params: ListParams) -> dict[str, Any]:
    """``prompts/list``: one page of the prompts the user may get."""
    shown = await avisible(request, list(context.prompts))
    return context.page(
        params, "prompts", [p.to_wire() for p in shown], per_user=any(p.permissions for p in context.prompts)
    )


async def get_prompt(context: ServerContext, request: McpRequest, params: GetPromptParams) -> dict[str, Any]:
    """``prompts/get``: validated string arguments, then the handler's messages."""
    name = params.name
    found = context.prompts.get(name)
    if found is not None and not await avisible(request, [found]):
        log_refusal(request, "prompt", name)
        found = None  # answered as for a prompt that does not exist
    if found is None:
        raise invalid_params(f"Unknown prompt: {name}", {"prompt": name})
    kwargs = found.validate_arguments(params.arguments)
    value = await arun_handler(f"Prompt {name!r}", found.handler, request, **kwargs)
    return prompt_result(found, value)
