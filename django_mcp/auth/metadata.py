"""RFC 9728 protected-resource metadata: where a client learns who signs it in for an endpoint."""

from __future__ import annotations

from typing import Any

from django.apps import apps
from django.http import HttpRequest, JsonResponse

from ..conf import get_settings
from ..endpoint import McpServer, server_at, servers
from .bearer import BearerAuth
from .conf import get_auth_settings


def protected_resource_metadata(request: HttpRequest, resource_path: str | None = None) -> JsonResponse:
    """``/.well-known/oauth-protected-resource/<endpoint path>``, and the root form for the whole site."""
    path = (resource_path or "").rstrip("/")
    chosen: list[McpServer]
    if path:
        server = server_at("/" + path)
        if server is None:
            return JsonResponse({"error": "not_found", "error_description": f"No MCP endpoint at {path}"}, status=404)
        chosen = [server]
    else:
        chosen = list(servers)
    bearers = [auth for auth in (s.auth for s in chosen) if isinstance(auth, BearerAuth)]
    bearer = bearers[0] if bearers else BearerAuth()
    configured = bearer.configured_resource_url
    resource = configured or request.build_absolute_uri("/" + path).rstrip("/")
    scopes = list(dict.fromkeys([*bearer.scopes, *(s for server in chosen for s in server.tools.scopes_used())]))
    data: dict[str, Any] = {
        "resource": resource,
        "authorization_servers": authorization_servers(request),
        "scopes_supported": [s for s in scopes if s != "offline_access"],
        "bearer_methods_supported": ["header"],
        "resource_name": get_settings().SERVER_TITLE or get_settings().SERVER_NAME,
    }
    response = JsonResponse(data)
    response["Access-Control-Allow-Origin"] = "*"  # browser-based clients read it cross-origin
    return response


def authorization_servers(request: HttpRequest) -> list[str]:
    """``OAUTH_AUTHORIZATION_SERVERS``; else ``OAUTH_JWT``'s issuer; else this project's django-oauth-toolkit."""
    settings = get_auth_settings()
    if settings.OAUTH_AUTHORIZATION_SERVERS:
        return list(settings.OAUTH_AUTHORIZATION_SERVERS)
    if settings.OAUTH_JWT is not None:
        return [settings.OAUTH_JWT.ISSUER]
    if apps.is_installed("oauth2_provider"):
        # Here: the oauth extra (django-oauth-toolkit) is optional.
        from oauth2_provider.settings import oauth2_settings

        return [oauth2_settings.oauth2_authorization_server_issuer(request)]
    return []
