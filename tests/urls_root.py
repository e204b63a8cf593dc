"""A URLconf serving the endpoint at the site's root (``mcp_path("")``)."""

from django_mcp import mcp_path

urlpatterns = [mcp_path("")]
