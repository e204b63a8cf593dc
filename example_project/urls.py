from django.contrib import admin
from django.urls import path

from django_mcp import McpServer
from django_mcp.tasks import McpTasks

# The project-wide registries (filled by the demo app's ready()), with the tasks extension.
mcp_server = McpServer(extension_plugins=[McpTasks(max=1000, ttl_ms=600_000, poll_interval_ms=1000)])

urlpatterns = [
    path("admin/", admin.site.urls),
    path("mcp/", mcp_server.urls),
]
