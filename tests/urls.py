from django.contrib import admin
from django.urls import include, path

from django_mcp import mcp_path

from . import oauth, servers, task_servers, timeouts
from .publishapp.api import api as publish_api
from .publishapp.server import publish_server

# Each form of mounting an endpoint, each serving its route with and without the trailing slash.
urlpatterns = [
    path("admin/", admin.site.urls),
    path("", include("django_mcp.auth.urls")),
    path("mcp-oauth", oauth.oauth_server.urls),
    path("mcp-timeouts", timeouts.timeouts_server.urls),
    path("health/", include("django_mcp.health")),
    mcp_path("mcp"),
    path("mcp-bearer", servers.bearer_server.urls),
    path("mcp-ext", servers.extension_server.urls),
    path("mcp-dynamic", servers.dynamic_server.urls),
    path("mcp-content", servers.content_server.urls),
    path("mcp-tasks", task_servers.tasks_server.urls),
    path("mcp-small", task_servers.small_server.urls),
    path("mcp-principal", task_servers.principal_server.urls),
    path("mcp-cap", task_servers.cap_server.urls),
    path("mcp-fair", task_servers.fair_server.urls),
    path("mcp-owner-cap", task_servers.owner_cap_server.urls),
    path("mcp-fleet", include("tests.fleetapp.urls")),
    path("mcp-publish", publish_server.urls),
    path("publish-api/", publish_api.urls),
]
