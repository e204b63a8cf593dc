from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.http import HttpRequest, HttpResponse
from django.urls import include, path

from django_mcp import McpServer, mcp_path
from django_mcp.auth import BearerAuth
from django_mcp.tasks import McpTasks
from tests.conformance.urls import server

# The same tools behind sign-in: the browser client signs in through /o/ (tests/field/test_browser_client.py).
signed_in = McpServer(auth=BearerAuth(), extension_plugins=[McpTasks()], urls_namespace="field_signed_in")


def dashboard(request: HttpRequest) -> HttpResponse:
    """A page of the team's own: LoginRequiredMiddleware sends anonymous visitors to LOGIN_URL."""
    return HttpResponse(f"Hello {request.user}")


urlpatterns = [
    path("admin/", admin.site.urls),
    path("accounts/login/", auth_views.LoginView.as_view(template_name="admin/login.html"), name="login"),
    path("dashboard/", dashboard),
    path("", include("django_mcp.auth.urls")),
    path("health/", include("django_mcp.health")),
    mcp_path("mcp", server),
    mcp_path("mcp-signed-in", signed_in),
]
