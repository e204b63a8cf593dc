"""The conformance suite's fixtures that only the handshake era (2025-11-25 and earlier) calls.

``python -m tests.conformance.runner --revision 2025-11-25`` judges the stateful
wire (``initialize``, ``Mcp-Session-Id``, server→client requests). Its
requirement set calls these tools, by exact name (suite 0.2.0-alpha.12):

=============================  =====================================  ==========================================
scenario                       tool                                   what the check needs
=============================  =====================================  ==========================================
tools-call-with-logging        ``test_tool_with_logging`` (no args)   >= 3 ``notifications/message`` during the
                                                                      call, after ``logging/setLevel debug``
tools-call-sampling            ``test_sampling`` (``prompt``)         a ``sampling/createMessage`` request to
                                                                      the client, then non-empty content
tools-call-elicitation         ``test_elicitation`` (``message``)     an ``elicitation/create`` request, then
                                                                      non-empty content
elicitation-sep1034-defaults   ``test_elicitation_sep1034_defaults``  the requested schema carries the defaults
                                                                      checked value by value (see below)
elicitation-sep1330-enums      ``test_elicitation_sep1330_enums``     the five enum shapes of SEP-1330
server-sse-polling (pending)   ``test_reconnection`` (no args)        see the tool's comment
=============================  =====================================  ==========================================

Everything else the 2025-11-25 set calls (``test_simple_text`` … ``test_tool_with_progress``,
``json_schema_2020_12_tool``, the resources, prompts and the completion of
``test_prompt_with_arguments``) is shared with 2026-07-28 and lives in
``fixtures.py`` and ``resources_prompts.py``.

The tools ask the client through ``request.aask``: in the handshake era that
must be a real server→client request on the SSE response of the ``tools/call``
POST, answered by the client's POSTed JSON-RPC response; in 2026-07-28 the same
call is an MRTR round (``input_required``). On the 2026-07-28 wire the suite
never calls these tools, and listing them changes no check.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from django_mcp import ElicitAnswer, McpRequest, SamplingAnswer, elicit, sample, tool

LOG_MESSAGES = ("Tool execution started", "Tool processing data", "Tool execution completed")

# tools-call-elicitation answers {"username": "testuser", "email": "test@example.com"}.
USER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "username": {"type": "string", "description": "User's response"},
        "email": {"type": "string", "description": "User's email address"},
    },
    "required": ["username", "email"],
}

# elicitation-sep1034-defaults checks each property's type and default exactly:
# name "John Doe", age 30 (integer), score 95.5 (number), status "active" (an enum
# member), verified true. The client answers name/age/score/status/verified.
SEP1034_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "User name", "default": "John Doe"},
        "age": {"type": "integer", "description": "User age", "default": 30},
        "score": {"type": "number", "description": "User score", "default": 95.5},
        "status": {
            "type": "string",
            "description": "User status",
            "enum": ["active", "inactive", "pending"],
            "default": "active",
        },
        "verified": {"type": "boolean", "description": "Verification status", "default": True},
    },
    "required": [],
}

# elicitation-sep1330-enums checks one property per enum shape, by these names:
# untitled single (enum, no oneOf/enumNames), titled single (oneOf of {const, title},
# no enum), legacy titled (enum + enumNames of the same length), untitled multi
# (array, items.enum), titled multi (array, items.anyOf of {const, title}). The client
# answers option1 / value1 / opt1 / [option1, option2] / [value1, value2].
SEP1330_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "untitledSingle": {
            "type": "string",
            "description": "Select one option",
            "enum": ["option1", "option2", "option3"],
        },
        "titledSingle": {
            "type": "string",
            "description": "Select one option with titles",
            "oneOf": [
                {"const": "value1", "title": "First Option"},
                {"const": "value2", "title": "Second Option"},
                {"const": "value3", "title": "Third Option"},
            ],
        },
        "legacyEnum": {
            "type": "string",
            "description": "Select one option (legacy)",
            "enum": ["opt1", "opt2", "opt3"],
            "enumNames": ["Option One", "Option Two", "Option Three"],
        },
        "untitledMulti": {
            "type": "array",
            "description": "Select multiple options",
            "minItems": 1,
            "maxItems": 3,
            "items": {"type": "string", "enum": ["option1", "option2", "option3"]},
        },
        "titledMulti": {
            "type": "array",
            "description": "Select multiple options with titles",
            "minItems": 1,
            "maxItems": 3,
            "items": {
                "anyOf": [
                    {"const": "value1", "title": "First Choice"},
                    {"const": "value2", "title": "Second Choice"},
                    {"const": "value3", "title": "Third Choice"},
                ]
            },
        },
    },
    "required": [],
}


def sampled_text(answer: SamplingAnswer) -> str:
    blocks = answer.content if isinstance(answer.content, list) else [answer.content]
    return " ".join(str(block.get("text", "")) for block in blocks if block.get("type") == "text")


def elicitation_text(prefix: str, answer: ElicitAnswer) -> str:
    content = json.dumps(answer.content or {}, sort_keys=True)
    return f"{prefix}: action={answer.action}, content={content}"


@tool(description="Sends three info log messages about 50 ms apart while it runs, then answers.")
async def test_tool_with_logging(request: McpRequest) -> str:
    # Handshake era: sent when the session's logging/setLevel admits "info" (the
    # suite sets "debug"). 2026-07-28: only when the request's _meta asks for a logLevel.
    for step, message in enumerate(LOG_MESSAGES):
        if step:
            await asyncio.sleep(0.05)
        request.log("info", message, logger="conformance")
    return "Tool with logging executed successfully"


@tool(
    description="Asks the client's model to answer a prompt (sampling/createMessage) and returns the answer.",
    input_schema={
        "type": "object",
        "properties": {"prompt": {"type": "string", "description": "The prompt to send to the LLM"}},
        "required": ["prompt"],
    },
)
async def test_sampling(request: McpRequest, prompt: str) -> str:
    question = sample(messages=[{"role": "user", "content": {"type": "text", "text": prompt}}], max_tokens=100)
    answers = await request.aask({"sampling": question})
    return f"LLM response: {sampled_text(answers['sampling']) or 'No response'}"


@tool(
    description="Asks the user for a username and an email (elicitation/create) and returns the answer.",
    input_schema={
        "type": "object",
        "properties": {"message": {"type": "string", "description": "The message to show the user"}},
        "required": ["message"],
    },
)
async def test_elicitation(request: McpRequest, message: str) -> str:
    answers = await request.aask({"user": elicit(message, USER_SCHEMA)})
    return elicitation_text("User response", answers["user"])


@tool(description="Elicitation whose form has a default for every primitive type (SEP-1034).")
async def test_elicitation_sep1034_defaults(request: McpRequest) -> str:
    form = elicit("Please review and update the form fields with defaults", SEP1034_SCHEMA)
    answers = await request.aask({"defaults": form})
    return elicitation_text("Elicitation completed", answers["defaults"])


@tool(description="Elicitation whose form uses all five enum schema shapes (SEP-1330).")
async def test_elicitation_sep1330_enums(request: McpRequest) -> str:
    form = elicit("Please select options from the enum fields", SEP1330_SCHEMA)
    answers = await request.aask({"enums": form})
    return elicitation_text("Elicitation completed", answers["enums"])


@tool(description="SSE polling (SEP-1699): the server closes the call's SSE stream mid-call; the result follows.")
async def test_reconnection(request: McpRequest) -> str:
    # server-sse-polling (pending, not scored) wants: the POST answered as SSE whose
    # first event is a priming event (an `id:` and empty data) with a `retry:`
    # field, the stream closed before the result, and the result delivered on the
    # GET stream the client opens with Last-Event-ID. Closing the stream needs a
    # server-side hook (the TypeScript reference calls transport.closeSSEStream,
    # FastMCP ctx.close_sse_stream()); django_mcp has none yet, so this only waits.
    # Without the close the scenario reports INFO/WARNING checks, no FAILURE.
    await asyncio.sleep(0.1)
    return (
        "Reconnection test completed successfully. If you received this, the client "
        "properly reconnected after stream closure."
    )
