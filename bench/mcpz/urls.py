"""``/mcp/``: django-mcpz's ``MCPServer`` serving the bench's ``echo`` tool.

django-mcpz 1.2.0 (read from the installed package): a tool is ``def tool(request, params)``
where ``params`` is a ``msgspec.Struct`` (its JSON Schema is derived from it; unknown arguments
are refused); a ``str`` return value is sent as one text content block. The server is a
synchronous Django view (under ASGI, Django runs it in its sync thread), stateless 2026-07-28
(``MCP-Protocol-Version``, ``Mcp-Method`` and ``Mcp-Name`` headers checked against the body), and
answers JSON. ``auth=public``: no authentication, as for the other targets.
"""

from __future__ import annotations

import msgspec
from django.conf import settings
from django.urls import path
from django_mcpz.server import MCPServer, public

if settings.AUTH == "oauth":
    from django_mcpz.oauth.auth import oauth_auth as auth
elif settings.AUTH == "tokens":
    from django_mcpz.bearer_tokens.auth import token_auth as auth
else:
    auth = public

server = MCPServer(name="bench-django-mcpz", version="0.1.0", auth=auth)


class EchoParams(msgspec.Struct):
    text: str


@server.tool(description="A sync tool: returns its argument.")
def echo(request, params: EchoParams) -> str:
    return params.text


urlpatterns = [path("mcp/", server)]
