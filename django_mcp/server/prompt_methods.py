"""``prompts/list`` and ``prompts/get``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..protocol.errors import invalid_params
from .context import McpRequest
from .handlers import run_handler
from .prompts import prompt_result

if TYPE_CHECKING:
    from .server import McpServer


async def list_prompts(server: McpServer, request: McpRequest) -> dict[str, Any]:
    """``prompts/list``: one page of prompts."""
    return server.page(request, "prompts", [p.to_wire() for p in server.prompts])


async def get_prompt(server: McpServer, request: McpRequest) -> dict[str, Any]:
    """``prompts/get``: validated string arguments, then the handler's messages."""
    name = request.params.get("name")
    found = server.prompts.get(name) if isinstance(name, str) else None
    if found is None:
        raise invalid_params(f"Unknown prompt: {name}", {"prompt": name})
    kwargs = found.validate_arguments(request.params.get("arguments"))
    value = await run_handler(f"Prompt {name!r}", found.handler, request, **kwargs)
    return prompt_result(found, value)
