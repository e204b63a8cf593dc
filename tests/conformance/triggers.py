"""Hooks the ``server-stateless`` scenario calls to make list-changed notifications happen.

``test_trigger_tool_change`` / ``test_trigger_prompt_change`` register a dummy
tool / prompt and unregister it again. Each registry change after startup is
broadcast through the Channels layer, so every open ``subscriptions/listen``
stream that asked for ``toolsListChanged`` / ``promptsListChanged`` gets
``notifications/tools/list_changed`` / ``notifications/prompts/list_changed``,
while ``tools/list`` and ``prompts/list`` end up unchanged (other scenarios
compare consecutive lists). Idempotent: a leftover dummy (e.g. from a call
that failed half-way) is removed first, so a repeated run never registers a
duplicate.

The handlers are async, so the broadcasts are scheduled on the server's loop.
"""

from __future__ import annotations

from django_mcp import McpRequest, prompts, registry, tool

DYNAMIC_TOOL = "test_dynamic_tool"
DYNAMIC_PROMPT = "test_dynamic_prompt"


def dynamic_tool(request: McpRequest) -> str:
    return "A short-lived tool registered by test_trigger_tool_change."


def dynamic_prompt(request: McpRequest) -> str:
    return "A short-lived prompt registered by test_trigger_prompt_change."


@tool(description="Changes the tool list (adds and removes a dummy tool), notifying listen streams.")
async def test_trigger_tool_change(request: McpRequest) -> str:
    if DYNAMIC_TOOL in registry:
        registry.unregister(DYNAMIC_TOOL)
    registry.register(dynamic_tool, name=DYNAMIC_TOOL, description="Short-lived tool used to signal a change.")
    registry.unregister(DYNAMIC_TOOL)
    return "The tool list changed: notifications/tools/list_changed was sent to listen streams."


@tool(description="Changes the prompt list (adds and removes a dummy prompt), notifying listen streams.")
async def test_trigger_prompt_change(request: McpRequest) -> str:
    if DYNAMIC_PROMPT in prompts:
        prompts.unregister(DYNAMIC_PROMPT)
    prompts.register(dynamic_prompt, name=DYNAMIC_PROMPT, description="Short-lived prompt used to signal a change.")
    prompts.unregister(DYNAMIC_PROMPT)
    return "The prompt list changed: notifications/prompts/list_changed was sent to listen streams."
