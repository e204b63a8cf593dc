"""Tools the endpoint tests call, registered into the project-wide registry."""

import asyncio
import threading
import time

from django_mcp import McpJsonRpcError, McpRequest, ToolError, registry, tool

# Filled by tools that record where/whether they ran, for the tests to read.
EVENTS: dict[str, object] = {}


@tool(title="Add", annotations={"readOnlyHint": True})
def add(request: McpRequest, a: int, b: int = 0) -> int:
    """Add two integers."""
    EVENTS["add_thread"] = threading.get_ident()
    return a + b


@tool
async def async_echo(request: McpRequest, text: str) -> str:
    """Echo text back (async)."""
    return text


@tool
def whoami(request: McpRequest) -> str:
    return repr(request.auth)


@tool
def boom(request: McpRequest) -> str:
    raise RuntimeError("the flux capacitor is empty")


@tool
def refuse(request: McpRequest) -> str:
    raise ToolError("Nope: the quota is used up.")


@tool
def rpc_error(request: McpRequest) -> str:
    raise McpJsonRpcError(-32099, "Custom application error", {"why": "testing"})


@tool
def needs_sampling(request: McpRequest) -> str:
    if "sampling" not in request.client_capabilities:
        from django_mcp.protocol.errors import missing_capability

        raise missing_capability({"sampling": {}})
    return "sampled"


STATS_SCHEMA = {
    "type": "object",
    "properties": {"count": {"type": "integer"}},
    "required": ["count"],
    "additionalProperties": False,
}


@tool(output_schema=STATS_SCHEMA)
def stats(request: McpRequest, count: int) -> dict:
    return {"count": count}


@tool(output_schema=STATS_SCHEMA)
def bad_stats(request: McpRequest) -> dict:
    return {"count": "many"}


@tool
def all_content(request: McpRequest) -> dict:
    png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
    return {
        "content": [
            {"type": "text", "text": "hello"},
            {"type": "image", "data": png, "mimeType": "image/png"},
            {"type": "audio", "data": "UklGRiQAAABXQVZF", "mimeType": "audio/wav"},
            {"type": "resource_link", "uri": "test://linked", "name": "linked"},
            {"type": "resource", "resource": {"uri": "test://embedded", "mimeType": "text/plain", "text": "inside"}},
        ]
    }


@tool
async def progress_steps(request: McpRequest, steps: int = 3) -> str:
    for i in range(1, steps + 1):
        request.progress(i, total=steps, message=f"step {i}")
        await asyncio.sleep(0.01)
    return "done"


@tool
async def progress_at_once(request: McpRequest) -> str:
    """Reports progress and answers without ever waiting: its whole call runs before the view looks."""
    request.progress(1, total=1, message="all at once")
    return "done"


@tool
def sync_progress(request: McpRequest) -> str:
    for i in range(1, 3):
        request.progress(i, total=2)
        time.sleep(0.01)
    return "done"


@tool
async def chatty(request: McpRequest) -> str:
    for level in ("debug", "info", "warning", "error"):
        request.log(level, {"said": level}, logger="chatty")
        await asyncio.sleep(0.005)
    return "said it all"


@tool
async def sleepy(request: McpRequest, seconds: float = 30) -> str:
    EVENTS["sleepy"] = "started"
    try:
        await asyncio.sleep(seconds)
    except asyncio.CancelledError:
        EVENTS["sleepy"] = "cancelled"
        raise
    EVENTS["sleepy"] = "finished"
    return "woke up"


@tool(
    input_schema={
        "type": "object",
        "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "limit": {"type": "integer", "x-mcp-header": "Limit"},
            "dry": {"type": "boolean", "x-mcp-header": "Dry"},
            "note": {"type": "string"},
        },
        "required": ["region"],
    }
)
def routed(request: McpRequest, region: str, limit: int = 10, dry: bool = False, note: str = "") -> str:
    return f"{region}:{limit}:{dry}"


SCHEMA_2020 = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "$anchor": "addr",
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
            "required": ["city"],
        }
    },
    "properties": {
        "home": {"$ref": "#/$defs/address"},
        "kind": {"anyOf": [{"const": "a"}, {"const": "b"}]},
        "n": {"allOf": [{"type": "integer"}, {"minimum": 1}]},
    },
    "if": {"properties": {"kind": {"const": "a"}}},
    "then": {"required": ["n"]},
    "else": {},
    "additionalProperties": False,
}


def schema_2020(request: McpRequest, **arguments: object) -> dict:
    return {"content": [{"type": "text", "text": ",".join(sorted(arguments))}]}


registry.register(schema_2020, input_schema=SCHEMA_2020, description="Keeps every 2020-12 keyword.")


# -- MRTR ------------------------------------------------------------------------

from django_mcp import elicit, list_roots, sample  # noqa: E402

NAME_FORM = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


DELETED: list[str] = []  # what the destructive tools below did, for the replay tests


@tool(annotations={"destructiveHint": True})
async def delete_thing(request: McpRequest, name: str) -> str:
    """Deletes after a confirmation: its requestState is single-use (the destructiveHint default)."""
    answers = await request.aask({"sure": elicit(f"Delete {name}?", NAME_FORM)})
    if answers["sure"].action != "accept":
        return "kept"
    DELETED.append(name)
    return f"deleted {name}"


@tool(annotations={"destructiveHint": True}, single_use_state=False)
async def delete_thing_replayable(request: McpRequest, name: str) -> str:
    await request.aask({"sure": elicit(f"Delete {name}?", NAME_FORM)})
    DELETED.append(name)
    return f"deleted {name}"


@tool(single_use_state=True)
async def once_only(request: McpRequest) -> str:
    await request.aask({"sure": elicit("Go?", NAME_FORM)})
    return "done"


@tool
async def greet_me(request: McpRequest) -> str:
    answers = await request.aask({"who": elicit("Who are you?", NAME_FORM)})
    answer = answers["who"]
    if answer.action != "accept":
        return f"No name ({answer.action})."
    return f"Hello {answer.content['name']}"


@tool
async def two_step(request: McpRequest, item: str) -> str:
    first = await request.aask({"size": elicit(f"Size of {item}?", {"type": "object", "properties": {}})})
    second = await request.aask({"colour": elicit(f"Colour of {item}?", {"type": "object", "properties": {}})})
    return f"{item}: {first['size'].content} {second['colour'].content}"


@tool
def sync_confirm(request: McpRequest) -> str:
    answer = request.ask({"ok": elicit("Sure?", {"type": "object", "properties": {"ok": {"type": "boolean"}}})})
    return f"confirmed={answer['ok'].content['ok']}"


@tool
async def strict_form(request: McpRequest) -> str:
    answer = await request.aask(
        {
            "age": elicit(
                "Age?",
                {"type": "object", "properties": {"age": {"type": "integer"}}, "required": ["age"]},
                validate=True,
            )
        }
    )
    return f"age={answer['age'].content['age']}"


@tool
async def ask_model(request: McpRequest) -> str:
    messages = [{"role": "user", "content": {"type": "text", "text": "Capital of France?"}}]
    if not request.can_ask(sample(messages, max_tokens=10)):
        return "no sampling"
    answer = await request.aask({"q": sample(messages, max_tokens=10)})
    return f"model said: {answer['q'].content['text']}"


@tool
async def my_roots(request: McpRequest) -> str:
    answer = await request.aask({"roots": list_roots()})
    return ",".join(root.uri for root in answer["roots"].roots)
