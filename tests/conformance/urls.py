from django.urls import path

from django_mcp import McpServer
from django_mcp.tasks import McpTasks

# The project-wide registries, with the tasks extension installed.
server = McpServer(extension_plugins=[McpTasks(max=10_000, ttl_ms=600_000, poll_interval_ms=200)])

urlpatterns = [
    path("mcp/", server.urls),
]
