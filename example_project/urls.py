from django.conf import settings
from django.contrib import admin
from django.urls import include, path

from django_mcp import McpServer, mcp_path
from django_mcp.tasks import McpTasks

from .demo.api import api

# The project-wide registries (filled by the demo app's ready()), with the tasks extension.
mcp_server = McpServer(extension_plugins=[McpTasks(max_tasks=1000, ttl_seconds=600, poll_interval_seconds=1)])

urlpatterns = [
    path("admin/", admin.site.urls),
    path("health/", include("django_mcp.health")),  # /health/live and /health/ready for a load balancer
    mcp_path("mcp", mcp_server),  # serves /mcp and /mcp/
    path("api/", api.urls),  # the demo's REST API, whose book operations are also tools
]
if settings.OAUTH:  # DJANGO_MCP_OAUTH=1: /.well-known/* metadata, sign-in and consent at /o/ (docs/sign-in.md)
    urlpatterns.append(path("", include("django_mcp.auth.urls")))
