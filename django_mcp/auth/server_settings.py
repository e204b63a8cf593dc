"""The django-oauth-toolkit settings that let Claude, ChatGPT, VS Code and Cursor sign in."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def authorization_server_settings(
    scopes: Mapping[str, str] | None = None, *, base_scopes: Sequence[str] | None = None, **overrides: Any
) -> dict[str, Any]:
    """``OAUTH2_PROVIDER`` for this project as the MCP endpoint's authorization server.

    PKCE with S256 only, ``iss`` in authorization responses, no tokens in URLs, tokens stored
    hashed, no implicit or password grant; client ID metadata documents (CIMD) on, and anonymous
    dynamic client registration for public clients only; ``none`` among the token endpoint's
    authentication methods; http redirects only to loopback, and a code used twice revokes its tokens
    (``McpOAuth2Validator``). ``scopes`` maps each scope to what the consent page says of it (default:
    ``{"mcp": "Use this site's MCP tools"}``); ``base_scopes`` are what a client that asks for no scope
    gets, the endpoint's ``OAUTH_SCOPES`` (default ``mcp``, or every scope if none is called that): a tool's
    extra scope comes by step-up; ``overrides`` are any other keys.
    """
    granted = dict(scopes) if scopes is not None else {"mcp": "Use this site's MCP tools"}
    if base_scopes is None:
        base_scopes = ["mcp"] if "mcp" in granted else list(granted)
    unknown = [scope for scope in base_scopes if scope not in granted]
    if unknown:
        raise ValueError(f"base_scopes {unknown} are not among the scopes {list(granted)}")
    settings: dict[str, Any] = {
        "SCOPES": granted,
        # A request without ``scope`` (ChatGPT's reconnect) gets the endpoint's base scope, not every scope.
        "DEFAULT_SCOPES": list(base_scopes),
        "OAUTH2_VALIDATOR_CLASS": "django_mcp.auth.validator.McpOAuth2Validator",
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
        # http only for loopback redirects (RFC 8252 §7.3; the validator and registration keep it so, which
        # is why oauth2_provider.W008 may be silenced); cursor:// is Cursor's callback.
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
