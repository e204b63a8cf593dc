from django.urls import path

from django_mcp import McpServer
from django_mcp.tasks import McpTasks

# The project-wide registries, with the tasks extension installed.
server = McpServer(extension_plugins=[McpTasks(max_tasks=10_000, ttl_seconds=600, poll_interval_seconds=0.2)])

urlpatterns = [
    path("mcp/", server.urls),
]
