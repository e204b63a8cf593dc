"""The endpoint mounted inside i18n_patterns(), as a project with translated URLs might try (check W018)."""

from django.conf.urls.i18n import i18n_patterns

from django_mcp import mcp_path

urlpatterns = i18n_patterns(mcp_path("mcp"))
