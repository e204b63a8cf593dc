"""Servers beside the default one: bearer auth, a test extension, per-request options."""

from typing import Any

from django.http import HttpRequest
from ninja.security import HttpBearer

from django_mcp import ExtensionMethod, ExtensionPlugin, McpRequest, McpServer, ServerOptions


class TokenAuth(HttpBearer):
    async def authenticate(self, request: HttpRequest, token: str) -> Any:
        return {"alice-token": "alice", "bob-token": "bob"}.get(token)


bearer_server = McpServer(auth=TokenAuth(), urls_namespace="mcp_bearer")


class EchoExtension(ExtensionPlugin):
    """A minimal extension: proves the plugin interface without the tasks code."""

    identifier = "com.example/echo"

    def capability(self, request: HttpRequest) -> dict[str, Any]:
        return {"maxLength": 100}

    def methods(self) -> dict[str, ExtensionMethod]:
        return {
            "echo/say": ExtensionMethod(self.say, name_param="text"),
            "echo/open": ExtensionMethod(self.say, requires_declaration=False),
        }

    def enabled(self, request: HttpRequest) -> bool:
        return request.headers.get("X-Beta") != "off"

    async def say(self, request: McpRequest) -> dict[str, Any]:
        return {"echoed": request.params.get("text")}


extension_server = McpServer(
    ServerOptions(name="ext-server", cache_ttl_ms=60_000, cache_scope="public"),
    extension_plugins=[EchoExtension()],
    urls_namespace="mcp_ext",
)


def per_request_options(request: HttpRequest) -> ServerOptions:
    return ServerOptions(instructions=f"Hello {request.headers.get('X-Tenant', 'nobody')}", server_info_in_meta=False)


dynamic_server = McpServer(per_request_options, extension_plugins=[EchoExtension()], urls_namespace="mcp_dynamic")
