"""The conformance suite's MRTR fixtures (SEP-2322, ``input-required-result-*`` scenarios).

Each handler asks through ``request.ask``: without the answers the request
ends with ``resultType: "input_required"`` plus a signed ``requestState``, and
the handler runs again from the top when the client retries with
``inputResponses``. Keys, methods and schemas follow the scenario descriptions
(``shared/conformance/README.md`` §2.8). Tampered state, non-object answers and
``inputResponses: null`` are rejected by django_mcp itself (-32602).
"""

from __future__ import annotations

from typing import Any

from django_mcp import (
    ElicitAnswer,
    InputRequest,
    McpRequest,
    RootsAnswer,
    SamplingAnswer,
    elicit,
    list_roots,
    prompt,
    sample,
    tool,
)

NAME_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"name": {"type": "string"}},
    "required": ["name"],
}
CONFIRM_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"ok": {"type": "boolean"}},
    "required": ["ok"],
}
COLOR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"color": {"type": "string"}},
    "required": ["color"],
}
CONTEXT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"context": {"type": "string"}},
    "required": ["context"],
}


def ask_name(message: str = "What is your name?") -> InputRequest[ElicitAnswer]:
    return elicit(message, NAME_SCHEMA)


def field(answer: ElicitAnswer, key: str) -> str:
    """An accepted elicitation's field as text, or the action taken instead."""
    if answer.action != "accept":
        return f"<{answer.action}>"
    return str((answer.content or {}).get(key, ""))


def sampled_text(answer: SamplingAnswer) -> str:
    blocks = answer.content if isinstance(answer.content, list) else [answer.content]
    return " ".join(str(b.get("text", "")) for b in blocks if b.get("type") == "text")


def root_uris(answer: RootsAnswer) -> str:
    return ", ".join(r.uri for r in answer.roots) or "<none>"


@tool(description="MRTR: asks for the user's name (elicitation, key user_name), then greets them.")
async def test_input_required_result_elicitation(request: McpRequest) -> str:
    answers = await request.aask({"user_name": ask_name()})
    return f"Hello, {field(answers['user_name'], 'name')}!"


@tool(description="MRTR: asks the client's model a question (sampling, key capital_question).")
async def test_input_required_result_sampling(request: McpRequest) -> str:
    question = sample(
        messages=[{"role": "user", "content": {"type": "text", "text": "What is the capital of France?"}}],
        max_tokens=100,
    )
    answers = await request.aask({"capital_question": question})
    return f"Sampling answered: {sampled_text(answers['capital_question'])}"


@tool(description="MRTR: asks for the client's roots (roots/list, key client_roots).")
async def test_input_required_result_list_roots(request: McpRequest) -> str:
    answers = await request.aask({"client_roots": list_roots()})
    return f"Client roots: {root_uris(answers['client_roots'])}"


@tool(description="MRTR: asks for a confirmation (key confirm) and answers state-ok once the requestState came back.")
async def test_input_required_result_request_state(request: McpRequest) -> str:
    answers = await request.aask({"confirm": elicit("Please confirm", CONFIRM_SCHEMA)})
    # django_mcp already verified the signature and binding of the echoed state.
    state = "state-ok" if "requestState" in request.params else "state-missing"
    return f"{state}: confirmed={field(answers['confirm'], 'ok')}"


@tool(description="MRTR: asks for an elicitation, a sampling and the roots in one round.")
async def test_input_required_result_multiple_inputs(request: McpRequest) -> str:
    answers = await request.aask(
        {
            "user_name": ask_name(),
            "greeting": sample(
                messages=[{"role": "user", "content": {"type": "text", "text": "Generate a greeting"}}],
                max_tokens=50,
            ),
            "client_roots": list_roots(),
        }
    )
    return (
        f"name={field(answers['user_name'], 'name')}; "
        f"greeting={sampled_text(answers['greeting'])}; "
        f"roots={root_uris(answers['client_roots'])}"
    )


@tool(description="MRTR over two rounds: step1 asks the name, step2 the favourite colour (state grows).")
async def test_input_required_result_multi_round(request: McpRequest) -> str:
    first = await request.aask({"step1": ask_name("Step 1: What is your name?")})
    second = await request.aask({"step2": elicit("Step 2: What is your favorite color?", COLOR_SCHEMA)})
    return f"{field(first['step1'], 'name')} likes {field(second['step2'], 'color')}."


@tool(description="MRTR with an integrity-protected requestState: a modified state is rejected (-32602).")
async def test_input_required_result_tampered_state(request: McpRequest) -> str:
    answers = await request.aask({"confirm": elicit("Please confirm", CONFIRM_SCHEMA)})
    return f"Verified state; confirmed={field(answers['confirm'], 'ok')}"


@tool(
    description=(
        "MRTR that only asks for what the request's client declared: elicitation if declared, "
        "else sampling, else roots."
    )
)
async def test_input_required_result_capabilities(request: McpRequest) -> str:
    by_elicitation = ask_name()
    by_sampling = sample(
        messages=[{"role": "user", "content": {"type": "text", "text": "What name should I use?"}}],
        max_tokens=50,
    )
    if request.can_ask(by_elicitation):
        answers = await request.aask({"user_name": by_elicitation})
        return f"Hello, {field(answers['user_name'], 'name')}!"
    if request.can_ask(by_sampling):
        answers = await request.aask({"user_name": by_sampling})
        return f"Hello, {sampled_text(answers['user_name'])}!"
    answers = await request.aask({"client_roots": list_roots()})  # -32021 when roots are not declared either
    return f"Client roots: {root_uris(answers['client_roots'])}"


@prompt(
    name="test_input_required_result_prompt",
    title="MRTR prompt",
    description="MRTR on prompts/get: asks which context to use (key user_context), then builds the prompt.",
)
async def test_input_required_result_prompt(request: McpRequest) -> str:
    answers = await request.aask({"user_context": elicit("What context should the prompt use?", CONTEXT_SCHEMA)})
    return f"Use this context: {field(answers['user_context'], 'context')}"
