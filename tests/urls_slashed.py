"""A URLconf mounting the endpoint with a trailing slash in its route: /mcp/ only (check W013)."""

from django.urls import include, path

urlpatterns = [path("mcp/", include("django_mcp.urls"))]
