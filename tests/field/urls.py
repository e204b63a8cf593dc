from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.http import HttpRequest, HttpResponse
from django.urls import include, path

from django_mcp import mcp_path
from tests.conformance.urls import server


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
]
