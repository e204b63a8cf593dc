"""``path("", include("django_mcp.auth.urls"))`` at the site root: the endpoints' RFC 9728 metadata, and
with django-oauth-toolkit installed this project as their authorization server.

Served: ``/.well-known/oauth-protected-resource[/<endpoint path>]``; with ``oauth2_provider`` in
``INSTALLED_APPS`` also ``/.well-known/oauth-authorization-server`` (RFC 8414), ``/o/authorize/``
(sign-in with Django's login view at ``/o/login/``, then consent), ``/o/token/``,
``/o/revoke_token/``, ``/o/introspect/`` and ``/o/register/`` (RFC 7591), in django-oauth-toolkit's
``oauth2_provider`` namespace.
"""

from __future__ import annotations

from django.apps import apps
from django.contrib.auth.decorators import login_not_required
from django.urls import URLPattern, URLResolver, include, path, re_path

from ..decorators import client_endpoint
from .metadata import protected_resource_metadata

urlpatterns: list[URLPattern | URLResolver] = [
    re_path(
        r"^\.well-known/oauth-protected-resource(?:/(?P<resource_path>.+))?/?$",
        client_endpoint(protected_resource_metadata),
        name="django_mcp_protected_resource",
    ),
]

if apps.is_installed("oauth2_provider"):
    from oauth2_provider import views as oauth_views

    from .pages import AuthorizationView, RegistrationView, SignInView

    _server = [
        path(
            ".well-known/oauth-authorization-server",
            client_endpoint(oauth_views.OAuthServerMetadataView.as_view()),
            name="oauth-server-metadata",
        ),
        # A person's page, but it sends an anonymous browser to /o/login/ itself (with the client's request
        # kept in ``next``), where LoginRequiredMiddleware would send it to the project's LOGIN_URL.
        path("o/authorize/", login_not_required(AuthorizationView.as_view()), name="authorize"),
        path("o/token/", client_endpoint(oauth_views.TokenView.as_view()), name="token"),
        path("o/revoke_token/", client_endpoint(oauth_views.RevokeTokenView.as_view()), name="revoke-token"),
        path("o/introspect/", client_endpoint(oauth_views.IntrospectTokenView.as_view()), name="introspect"),
        path("o/register/", client_endpoint(RegistrationView.as_view()), name="dcr-register"),
        path(
            "o/register/<str:client_id>/",
            client_endpoint(oauth_views.DynamicClientRegistrationManagementView.as_view()),
            name="dcr-register-management",
        ),
    ]
    urlpatterns += [
        path("", include((_server, "oauth2_provider"))),
        path("o/login/", SignInView.as_view(), name="django_mcp_login"),
    ]
