"""``path("mcp/", include("django_mcp.urls"))``: the default server over the project-wide registry."""

from __future__ import annotations

from .endpoint import McpServer

default_server = McpServer()

app_name = "django_mcp"
urlpatterns = default_server.urls[0]
