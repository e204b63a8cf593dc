"""What django-cors-headers needs to let browser-based MCP clients on other origins in.

In ``settings.py``::

    from django_mcp.cors import CORS_ALLOW_HEADERS, CORS_EXPOSE_HEADERS

    CORS_ALLOWED_ORIGINS = ["https://app.example.com"]
    CORS_URLS_REGEX = r"^/(mcp|o|\\.well-known)(/.*)?$"  # the endpoint, sign-in and their metadata

CORS only lets a page read the answers; which origins may call the endpoint at all is still
``DJANGO_MCP["ALLOWED_ORIGINS"]`` (DNS-rebinding protection), so list the same origins there.
A tool whose argument carries ``"x-mcp-header": "Region"`` needs ``"mcp-param-region"`` added to
``CORS_ALLOW_HEADERS`` (docs/clients.md, "Browser clients").
"""

from __future__ import annotations

from corsheaders.defaults import default_headers

__all__ = ["CORS_ALLOW_HEADERS", "CORS_EXPOSE_HEADERS"]

CORS_ALLOW_HEADERS: tuple[str, ...] = (
    *default_headers,  # accept, authorization, content-type, user-agent, x-csrftoken, x-requested-with …
    "mcp-protocol-version",
    "mcp-method",
    "mcp-name",
    "mcp-session-id",
    "last-event-id",
)
"""The request headers a browser client sends: ``Authorization`` and the MCP routing headers."""

CORS_EXPOSE_HEADERS: tuple[str, ...] = ("mcp-session-id", "mcp-protocol-version", "www-authenticate", "retry-after")
"""The response headers a browser client must read: the session, the era, the sign-in challenge."""
