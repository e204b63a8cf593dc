"""The official SDK target (``mcp`` 2.3.x): ``MCPServer``, stateless HTTP, JSON responses.

Plain ``tools/call`` only (the SDK has no tasks runtime). Run by the harness in its own
virtualenv under uvicorn: ``uvicorn --factory bench.servers.sdk_server:app``.
"""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer


def build() -> MCPServer:
    server = MCPServer("bench-sdk")

    @server.tool()
    def echo(text: str) -> str:
        """A sync tool: returns its argument."""
        return text

    return server


def app():  # uvicorn --factory
    return build().streamable_http_app(streamable_http_path="/mcp/", stateless_http=True, json_response=True)
