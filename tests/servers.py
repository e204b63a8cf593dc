"""Servers beside the default one: bearer auth, a test extension, per-request options."""

from typing import Any

from django.http import HttpRequest
from ninja.security import HttpBearer
from pydantic import StrictStr

from django_mcp import (
    ExtensionMethod,
    ExtensionPlugin,
    ExtensionResult,
    McpRequest,
    McpServer,
    ServerOptions,
    Tool,
    ToolRegistry,
)
from django_mcp.server.extensions import ProceedToolCall
from django_mcp.server.params import Params


class TokenAuth(HttpBearer):
    async def authenticate(self, request: HttpRequest, token: str) -> Any:
        if token == "db-down":  # an auth that needs the database while it is down
            from django.db import OperationalError

            raise OperationalError("could not connect to server")
        return {"alice-token": "alice", "bob-token": "bob"}.get(token)


bearer_server = McpServer(auth=TokenAuth(), urls_namespace="mcp_bearer")


class SayParams(Params):
    text: StrictStr


def _shout_option(value: Any) -> None:
    if not isinstance(value, bool):
        raise ValueError("must be True or False")


class EchoExtension(ExtensionPlugin):
    """A second extension: proves the plugin interface without the tasks code.

    It serves two methods with typed params, claims a tool option (``shout``)
    that it advertises per tool and applies by wrapping ``tools/call``.
    """

    identifier = "com.example/echo"
    tool_options = {"shout": _shout_option}

    def capability(self, request: McpRequest) -> dict[str, Any]:
        return {"maxLength": 100}

    def methods(self) -> dict[str, ExtensionMethod]:
        return {
            "echo/say": ExtensionMethod(self.say, SayParams, name_param="text"),
            "echo/open": ExtensionMethod(self.say, SayParams, requires_declaration=False),
        }

    def enabled(self, request: McpRequest) -> bool:
        return request.headers.get("x-beta") != "off"

    def decorate_tool(self, tool: Tool, wire: dict[str, Any]) -> None:
        if tool.extension_options.get("shout"):
            wire.setdefault("_meta", {})["com.example/echo/shout"] = True

    async def call_tool(self, request: McpRequest, tool: Tool, proceed: ProceedToolCall) -> Any:
        value = await proceed(request)
        if tool.extension_options.get("shout") and isinstance(value, str):
            return ExtensionResult({"content": [{"type": "text", "text": value.upper()}]})
        return value

    async def say(self, request: McpRequest, params: SayParams) -> dict[str, Any]:
        return {"echoed": params.text}


echo_tools = ToolRegistry(name="echo-ext")


@echo_tools.register(shout=True)
def greet(request: McpRequest, name: str) -> str:
    return f"hello {name}"


extension_server = McpServer(
    ServerOptions(name="ext-server", cache_ttl_seconds=60, cache_scope="public"),
    tools=echo_tools,
    extension_plugins=[EchoExtension()],
    urls_namespace="mcp_ext",
)


def per_request_options(request: HttpRequest) -> ServerOptions:
    return ServerOptions(instructions=f"Hello {request.headers.get('X-Tenant', 'nobody')}", server_info_in_meta=False)


dynamic_server = McpServer(per_request_options, extension_plugins=[EchoExtension()], urls_namespace="mcp_dynamic")


# -- a server with its own registries of prompts and resources -----------------------

from django_mcp import PromptArgument, PromptRegistry, ResourceRegistry, ToolRegistry  # noqa: E402

content_tools = ToolRegistry(name="content")
content_prompts = PromptRegistry(name="content")
content_resources = ResourceRegistry(name="content")


@content_tools.register
def ping_tool(request: McpRequest) -> str:
    return "pong"


@content_prompts.register(description="Says hello.")
def hello(request: McpRequest) -> str:
    return "Say hello to the user."


def colours(request: McpRequest, value: str, arguments: dict) -> list[str]:
    return [c for c in ("red", "green", "blue", "rose") if c.startswith(value)]


def many(request: McpRequest, value: str, arguments: dict) -> list[str]:
    return [f"{value}{i}" for i in range(150)]


@content_prompts.register(
    arguments=[
        PromptArgument("colour", description="A colour", required=True),
        PromptArgument("shade", required=False),
    ],
    complete={"colour": colours, "shade": many},
    title="Paint",
)
async def paint(request: McpRequest, colour: str, shade: str = "plain") -> list:
    return [
        f"Paint it {colour} ({shade}).",
        {"role": "assistant", "content": {"type": "text", "text": "Which wall?"}},
        {"role": "user", "content": {"type": "resource", "resource": {"uri": "test://wall", "text": "north wall"}}},
    ]


@content_prompts.register
def broken_prompt(request: McpRequest) -> str:
    raise RuntimeError("prompt exploded")


@content_resources.register("test://readme", mime_type="text/plain", description="The readme.")
def readme(request: McpRequest) -> str:
    return "Read me."


@content_resources.register("test://logo", mime_type="image/png")
def logo(request: McpRequest) -> bytes:
    return b"\x89PNG\r\n"


def user_ids(request: McpRequest, value: str, arguments: dict) -> list[str]:
    return [i for i in ("1", "12", "123", "2") if i.startswith(value)]


@content_resources.register(
    "test://users/{user_id}/profile", mime_type="application/json", complete={"user_id": user_ids}
)
async def profile(request: McpRequest, user_id: str) -> dict:
    return {"text": f'{{"id": "{user_id}"}}'}


@content_resources.register("test://broken")
def broken_resource(request: McpRequest) -> str:
    raise RuntimeError("disk on fire")


content_server = McpServer(
    tools=content_tools, prompts=content_prompts, resources=content_resources, urls_namespace="mcp_content"
)
