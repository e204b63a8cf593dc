"""System checks for sign-in: what would make a known MCP client fail to sign in, or leave an endpoint open.

E010 an endpoint without auth in production; E011-E014, W015, W020 and W021 an authorization server
(this project's django-oauth-toolkit) that some client cannot use or that takes too much; E015 token
auth without the metadata that clients discover it by; E016 and W016 a canonical URL that is not https or not known.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.apps import AppConfig, apps
from django.conf import settings
from django.core import checks
from django.core.checks import CheckMessage, Error, Tags, register
from django.core.exceptions import ImproperlyConfigured
from django.urls import NoReverseMatch, reverse

from ..checks import built_servers
from ..conf import SETTINGS_NAME
from .bearer import BearerAuth
from .conf import get_auth_settings

_DOCS = "See docs/sign-in.md."


@register(Tags.security, deploy=True)
def check_endpoint_auth(
    app_configs: Sequence[AppConfig] | None = None, databases: Sequence[str] | None = None, **kwargs: Any
) -> list[CheckMessage]:
    """E010: outside DEBUG, an endpoint anyone can call (unless ALLOW_UNAUTHENTICATED says so)."""
    if settings.DEBUG or get_auth_settings().ALLOW_UNAUTHENTICATED:
        return []
    return [
        Error(
            f"The MCP endpoint {server.urls_namespace!r} has no auth: anyone who can reach it can call its tools.",
            hint=f"Set {SETTINGS_NAME}['AUTH'] = 'django_mcp.auth.BearerAuth' (or any django-ninja auth), or "
            f"{SETTINGS_NAME}['ALLOW_UNAUTHENTICATED'] = True if it is meant to be open. {_DOCS}",
            obj=server,
            id="django_mcp.E010",
        )
        for server in built_servers()
        if server.auth is None
    ]


@register(Tags.security)
def check_authorization_server(
    app_configs: Sequence[AppConfig] | None = None, databases: Sequence[str] | None = None, **kwargs: Any
) -> list[CheckMessage]:
    """E011 PKCE optional; E012 ``plain`` PKCE accepted; E013 neither CIMD nor DCR; E014 CIMD without
    public clients; W015 no ``iss`` in authorization responses; W020 http redirects beyond loopback;
    W021 no base scope for a client that asks for none. Only when this project is the MCP
    endpoint's authorization server (``include("django_mcp.auth.urls")`` with django-oauth-toolkit)."""
    if not apps.is_installed("oauth2_provider") or not _mounted("oauth2_provider:authorize"):
        return []
    # Here: the oauth extra (django-oauth-toolkit) is optional.
    from oauth2_provider.settings import oauth2_settings as dot

    # Here: it subclasses django-oauth-toolkit's validator (the oauth extra, optional).
    from .validator import McpOAuth2Validator

    hint = "Start from OAUTH2_PROVIDER = django_mcp.auth.authorization_server_settings(). " + _DOCS
    found: list[tuple[bool, str, str, bool]] = [
        (dot.PKCE_REQUIRED is not True, "E011", "PKCE is not required: every MCP client must use it", True),
        (
            not dot.COMPLIANT_BCP_RFC9700_PKCE_METHOD,
            "E012",
            "PKCE 'plain' is accepted: MCP requires S256 (set COMPLIANT_BCP_RFC9700_PKCE_METHOD)",
            True,
        ),
        (
            not dot.CIMD_ENABLED and not dot.DCR_ENABLED,
            "E013",
            "Neither client ID metadata documents (CIMD_ENABLED) nor dynamic client registration (DCR_ENABLED) "
            "is on: Claude, ChatGPT, VS Code and Cursor cannot register",
            True,
        ),
        (
            dot.CIMD_ENABLED and "none" not in dot.OAUTH2_TOKEN_ENDPOINT_AUTH_METHODS_SUPPORTED,
            "E014",
            "CIMD is on but 'none' is not among OAUTH2_TOKEN_ENDPOINT_AUTH_METHODS_SUPPORTED: CIMD clients are "
            "public and Claude will not sign in",
            True,
        ),
        (
            not dot.COMPLIANT_BCP_RFC9700_AUTHZ_RESPONSE_ISS,
            "W015",
            "Authorization responses carry no 'iss' (RFC 9207): clients cannot detect mix-up attacks",
            False,
        ),
        (
            "http" in dot.ALLOWED_REDIRECT_URI_SCHEMES
            and not issubclass(dot.OAUTH2_VALIDATOR_CLASS, McpOAuth2Validator),
            "W020",
            "Plain-http redirect URIs are allowed to any host, not only to loopback (RFC 9700 §2.1): "
            "OAUTH2_VALIDATOR_CLASS is not django_mcp.auth.validator.McpOAuth2Validator or a subclass",
            False,
        ),
        (
            not set(_base_scopes()) <= set(dot.DEFAULT_SCOPES),
            "W021",
            "DEFAULT_SCOPES lacks the endpoint's OAUTH_SCOPES: a client that asks for no scope (ChatGPT "
            "reconnecting) gets a token the endpoint refuses",
            False,
        ),
    ]
    return [
        (Error if error else checks.Warning)(f"OAUTH2_PROVIDER: {message}.", hint=hint, id=f"django_mcp.{code}")
        for bad, code, message, error in found
        if bad
    ]


def _base_scopes() -> tuple[str, ...]:
    try:
        return get_auth_settings().OAUTH_SCOPES
    except ImproperlyConfigured:  # django_mcp.E002 says what is wrong with them
        return ()


@register(Tags.urls)
def check_resource_metadata(
    app_configs: Sequence[AppConfig] | None = None, databases: Sequence[str] | None = None, **kwargs: Any
) -> list[CheckMessage]:
    """E015: an endpoint takes bearer tokens, but clients cannot discover who issues them."""
    if not any(isinstance(server.auth, BearerAuth) for server in built_servers()):
        return []
    if _mounted("django_mcp_protected_resource"):
        return []
    return [
        Error(
            "An MCP endpoint uses BearerAuth but its protected-resource metadata (RFC 9728) is not served: "
            "clients cannot find where to sign in.",
            hint='Add path("", include("django_mcp.auth.urls")) to the root URLconf. ' + _DOCS,
            id="django_mcp.E015",
        )
    ]


@register(Tags.security, deploy=True)
def check_canonical_url(
    app_configs: Sequence[AppConfig] | None = None, databases: Sequence[str] | None = None, **kwargs: Any
) -> list[CheckMessage]:
    """E016: tokens bound to a plain-http URL outside DEBUG; W016: the canonical URL taken from requests
    with nothing telling Django the scheme behind a proxy (every audience check would then fail)."""
    if settings.DEBUG or not any(isinstance(server.auth, BearerAuth) for server in built_servers()):
        return []
    configured = get_auth_settings().OAUTH_RESOURCE_URL
    if configured is not None and configured.startswith("http://"):
        return [
            Error(
                f"{SETTINGS_NAME}['OAUTH_RESOURCE_URL'] is {configured!r}: bearer tokens would travel unencrypted.",
                hint="Serve the endpoint over https and give its https URL. " + _DOCS,
                id="django_mcp.E016",
            )
        ]
    if configured is None and settings.SECURE_PROXY_SSL_HEADER is None:
        return [
            checks.Warning(
                f"{SETTINGS_NAME}['OAUTH_RESOURCE_URL'] is not set, so the endpoint's canonical URL is taken from "
                "each request; behind a TLS-terminating proxy it would read http:// and no token would match.",
                hint=f"Set {SETTINGS_NAME}['OAUTH_RESOURCE_URL'] = 'https://your.host/mcp' (or "
                "SECURE_PROXY_SSL_HEADER and USE_X_FORWARDED_HOST as your proxy needs). " + _DOCS,
                id="django_mcp.W016",
            )
        ]
    return []


def _mounted(name: str) -> bool:
    try:
        reverse(name, kwargs={"resource_path": "x"} if name == "django_mcp_protected_resource" else None)
    except NoReverseMatch:
        return False
    except Exception:  # a URLconf may fail to import in any way: Django's own URL checks say why
        return False
    return True
