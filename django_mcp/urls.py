"""Mounting an MCP endpoint in ``urls.py``.

``mcp_path("mcp")`` serves the default server (the project-wide registries) at
both ``/mcp`` and ``/mcp/``; ``mcp_path("billing/mcp", server)`` serves a server
of your own there. ``path("mcp", include("django_mcp.urls"))`` and
``path("mcp", server.urls)`` do the same. With a trailing slash in the route,
``path("mcp/", ...)`` serves ``/mcp/`` only: Django cannot redirect a POST to the
slashed URL, so a client posting to ``/mcp`` would get an error page (check
``django_mcp.W013`` says so).
"""

from __future__ import annotations

import re
from functools import cache
from typing import TYPE_CHECKING, Any

from django.core.exceptions import ImproperlyConfigured
from django.urls import include, re_path

from .endpoint import McpServer

if TYPE_CHECKING:
    from django.urls import URLResolver

app_name = "django_mcp"


@cache
def _default_server() -> McpServer:
    # Built on first use (the URLconf import), not when django_mcp is imported: a server that is never
    # mounted must not exist, or the system checks would inspect it.
    return McpServer()


def __getattr__(name: str) -> Any:
    # ``include("django_mcp.urls")`` reads ``urlpatterns``; ``default_server`` names the server it serves.
    if name == "urlpatterns":
        return _default_server().urls[0]
    if name == "default_server":
        return _default_server()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def mcp_path(route: str, server: McpServer | None = None) -> URLResolver:
    """A URL pattern serving ``server`` at ``route`` with and without the trailing slash.

    ``route`` is a literal prefix such as ``"mcp"`` or ``"api/mcp/"`` (a trailing
    slash makes no difference; no leading slash, no path converters: use
    ``re_path`` with ``server.urls`` for those). ``server`` defaults to the
    project-wide server of ``include("django_mcp.urls")`` (namespace
    ``django_mcp``); a :class:`McpServer` of your own keeps its ``urls_namespace``.
    """
    if not isinstance(route, str) or route.startswith("/") or "<" in route or "//" in route:
        raise ImproperlyConfigured(
            f"mcp_path({route!r}): give a literal route without a leading slash, e.g. mcp_path('mcp') "
            "(for path converters use re_path(..., server.urls))"
        )
    stem = route.rstrip("/")
    target = include("django_mcp.urls") if server is None else server.urls
    # The endpoint's own patterns answer "" and "/" after the prefix, so /mcp and /mcp/ both resolve (and
    # APPEND_SLASH has nothing to redirect) while /mcpx, /mcp/x and /mcp// stay 404.
    return re_path(rf"^{re.escape(stem)}" if stem else "^", target)
