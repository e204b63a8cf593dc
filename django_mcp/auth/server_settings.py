"""The django-oauth-toolkit settings that let Claude, ChatGPT, VS Code and Cursor sign in."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def authorization_server_settings(scopes: Mapping[str, str] | None = None, **overrides: Any) -> dict[str, Any]:
    """``OAUTH2_PROVIDER`` for this project as the MCP endpoint's authorization server.

    PKCE with S256 only, ``iss`` in authorization responses, no tokens in URLs, tokens stored
    hashed, no implicit or password grant; client ID metadata documents (CIMD) on, and anonymous
    dynamic client registration for public clients only; ``none`` among the token endpoint's
    authentication methods. ``scopes`` maps each scope to what the consent page says of it
    (default: ``{"mcp": "Use this site's MCP tools"}``); ``overrides`` are any other keys.
    """
    granted = dict(scopes) if scopes is not None else {"mcp": "Use this site's MCP tools"}
    settings: dict[str, Any] = {
        "SCOPES": granted,
        "DEFAULT_SCOPES": list(granted),
        "PKCE_REQUIRED": True,
        "COMPLIANT_BCP_RFC9700_PKCE_METHOD": True,
        "COMPLIANT_BCP_RFC9700_AUTHZ_RESPONSE_ISS": True,
        "COMPLIANT_BCP_RFC9700_ACCESS_TOKEN_TRANSPORT": True,
        "COMPLIANT_BCP_RFC9700_TOKEN_STORAGE": True,
        "COMPLIANT_BCP_RFC9700_IMPLICIT_GRANT": True,
        "COMPLIANT_BCP_RFC9700_PASSWORD_GRANT": True,
        "CIMD_ENABLED": True,
        "DCR_ENABLED": True,
        "DCR_REGISTRATION_PERMISSION_CLASSES": ("django_mcp.auth.registration.PublicClientRegistration",),
        "OAUTH2_TOKEN_ENDPOINT_AUTH_METHODS_SUPPORTED": ["none", "client_secret_basic", "client_secret_post"],
        # http only for loopback redirects (checked at registration); cursor:// is Cursor's callback.
        "ALLOWED_REDIRECT_URI_SCHEMES": ["https", "http", "cursor"],
        "ALLOW_LOCALHOST_LOOPBACK": True,
        "ACCESS_TOKEN_EXPIRE_SECONDS": 3600,
        # What a client registered anonymously can use (RFC 8414 metadata): not client_credentials nor the
        # device grant, which that registration refuses.
        "OAUTH2_GRANT_TYPES_SUPPORTED": ["authorization_code", "refresh_token"],
        # A replayed refresh token revokes its whole family (RFC 9700 §4.14.2; public clients have no secret).
        "REFRESH_TOKEN_REUSE_PROTECTION": True,
        # The registration's own access token (RFC 7592) lasts a year: django-oauth-toolkit's "never" is an
        # aware datetime, which a USE_TZ = False project cannot store (every registration answered 500).
        "DCR_REGISTRATION_TOKEN_EXPIRE_SECONDS": 365 * 24 * 3600,
    }
    settings.update(overrides)
    return settings
