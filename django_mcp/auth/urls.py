"""``path("", include("django_mcp.auth.urls"))`` at the site root: the endpoints' RFC 9728 metadata, and
with django-oauth-toolkit installed this project as their authorization server.

Served: ``/.well-known/oauth-protected-resource[/<endpoint path>]``; with ``oauth2_provider`` in
``INSTALLED_APPS`` also ``/.well-known/oauth-authorization-server`` (RFC 8414), ``/o/authorize/``
(sign-in with Django's login view at ``/o/login/``, then consent), ``/o/token/``,
``/o/revoke_token/``, ``/o/introspect/`` and ``/o/register/`` (RFC 7591), in django-oauth-toolkit's
``oauth2_provider`` namespace.
"""

from __future__ import annotations

from typing import Any

from django.apps import apps
from django.contrib.auth.decorators import login_not_required
from django.contrib.auth.views import LoginView
from django.http import HttpRequest
from django.urls import URLPattern, URLResolver, include, path, re_path, reverse_lazy

from ..decorators import client_endpoint
from .metadata import protected_resource_metadata
from .registration import refuse_registration

urlpatterns: list[URLPattern | URLResolver] = [
    re_path(
        r"^\.well-known/oauth-protected-resource(?:/(?P<resource_path>.+))?/?$",
        client_endpoint(protected_resource_metadata),
        name="django_mcp_protected_resource",
    ),
]

if apps.is_installed("oauth2_provider"):
    from oauth2_provider import views as oauth_views

    class _AuthorizationView(oauth_views.AuthorizationView):  # type: ignore[misc]  # (no stubs: Any)
        login_url = reverse_lazy("django_mcp_login")

    class _RegistrationView(oauth_views.DynamicClientRegistrationView):  # type: ignore[misc]
        """RFC 7591 registration, its body bounded and anonymous callers rate-limited before DOT reads it."""

        def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> Any:
            refused = refuse_registration(request)
            return refused if refused is not None else super().post(request, *args, **kwargs)

    _server = [
        path(
            ".well-known/oauth-authorization-server",
            client_endpoint(oauth_views.OAuthServerMetadataView.as_view()),
            name="oauth-server-metadata",
        ),
        # A person's page, but it sends an anonymous browser to /o/login/ itself (with the client's request
        # kept in ``next``), where LoginRequiredMiddleware would send it to the project's LOGIN_URL.
        path("o/authorize/", login_not_required(_AuthorizationView.as_view()), name="authorize"),
        path("o/token/", client_endpoint(oauth_views.TokenView.as_view()), name="token"),
        path("o/revoke_token/", client_endpoint(oauth_views.RevokeTokenView.as_view()), name="revoke-token"),
        path("o/introspect/", client_endpoint(oauth_views.IntrospectTokenView.as_view()), name="introspect"),
        path("o/register/", client_endpoint(_RegistrationView.as_view()), name="dcr-register"),
        path(
            "o/register/<str:client_id>/",
            client_endpoint(oauth_views.DynamicClientRegistrationManagementView.as_view()),
            name="dcr-register-management",
        ),
    ]
    urlpatterns += [
        path("", include((_server, "oauth2_provider"))),
        path(
            "o/login/",
            # Opened directly (no ``next``), a sign-in comes back here and says who is signed in, instead of
            # going to LOGIN_REDIRECT_URL (/accounts/profile/, a 404 in most projects).
            LoginView.as_view(
                template_name="django_mcp/oauth/login.html",
                redirect_authenticated_user=False,
                next_page=reverse_lazy("django_mcp_login"),
            ),
            name="django_mcp_login",
        ),
    ]
