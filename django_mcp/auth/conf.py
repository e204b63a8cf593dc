"""The sign-in keys of ``DJANGO_MCP`` (``OAUTH_*``), registered with the core's settings dict."""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..conf import settings_section

_SCOPE_TOKEN = re.compile(r"[\x21\x23-\x5b\x5d-\x7e]+")  # RFC 6749 scope-token: no spaces, quotes or backslashes


class JwtSettings(BaseModel):
    """``OAUTH_JWT``: accept JWT access tokens (RFC 9068) of an external identity provider."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    ISSUER: str = Field(min_length=1)
    """The ``iss`` the tokens must carry (e.g. ``https://tenant.auth0.com/``)."""
    JWKS_URL: str = Field(min_length=1)
    """Where the issuer publishes its signing keys."""
    AUDIENCE: str | None = None
    """The ``aud`` the tokens must carry; None: the endpoint's canonical URL (``OAUTH_RESOURCE_URL``)."""
    ALGORITHMS: tuple[str, ...] = ("RS256", "ES256")
    USER_CLAIM: str = Field(default="sub", min_length=1)
    """The claim naming the Django user (matched against the user model's ``USERNAME_FIELD``)."""
    LEEWAY_SECONDS: float = Field(default=30, ge=0)
    JWKS_CACHE_SECONDS: int = Field(default=300, gt=0)
    JWKS_REFRESH_COOLDOWN_SECONDS: float = Field(default=30, ge=0)
    """An unknown ``kid`` fetches the keys again at most this often (a flood of forged kids costs one fetch)."""


class AuthSettings(BaseModel):
    """The ``OAUTH_*`` keys of ``DJANGO_MCP``. See docs/sign-in.md."""

    model_config = ConfigDict(frozen=True)

    OAUTH_SCOPES: tuple[str, ...] = ("mcp",)
    """Scopes every token must carry to use the endpoint at all (tools may ask for more)."""
    OAUTH_RESOURCE_URL: str | None = None
    """The endpoint's canonical URL (RFC 8707 ``resource``; tokens must be issued for it).
    None: built from the request (scheme, host and the endpoint's path)."""
    OAUTH_AUTHORIZATION_SERVERS: tuple[str, ...] = ()
    """Issuers that sign clients in; empty: this project (django-oauth-toolkit), or ``OAUTH_JWT``'s issuer."""
    OAUTH_TOKEN_VERIFIERS: tuple[str, ...] | None = None
    """Dotted paths of ``TokenVerifier`` classes, asked in turn; None: personal tokens, then JWTs if
    ``OAUTH_JWT`` is set, then django-oauth-toolkit's tokens if it is installed."""
    OAUTH_JWT: JwtSettings | None = None
    OAUTH_TOKEN_CACHE_SECONDS: float = Field(default=10, ge=0)
    """How long a process remembers a verified token (no query, no thread hop while it does); a token
    revoked or a user changed elsewhere is forgotten within ``cache.REVOCATION_CHECK_SECONDS`` of the
    commit, through the shared cache. 0: verify every request."""
    OAUTH_MAX_TOKEN_CHARS: int = Field(default=4096, ge=64)
    """Longer bearer tokens are refused before any verifier sees them."""
    OAUTH_USER_FOR_CLAIMS: str = Field(default="django_mcp.auth.user_for_claims", min_length=1)
    """Dotted path of ``f(claims: dict, settings: JwtSettings) -> user | None`` for external tokens."""
    OAUTH_REGISTRATION_RATE: str | None = "20/h"
    """Anonymous dynamic client registrations one address may make (django-ratelimit's rate); past it 429.
    None: no limit. Each registration is also bounded in size (``registration.MAX_BODY_BYTES``)."""
    OAUTH_REGISTRATION_RETENTION_DAYS: float = Field(default=7, ge=0)
    """``manage.py mcp_clear_registrations`` deletes anonymous registrations this old that never got a token."""
    ALLOW_UNAUTHENTICATED: bool = False
    """Serve an endpoint without auth outside DEBUG (``check --deploy`` says ``django_mcp.E010`` otherwise)."""

    @field_validator("OAUTH_SCOPES")
    @classmethod
    def _scope_tokens(cls, scopes: tuple[str, ...]) -> tuple[str, ...]:
        bad = [s for s in scopes if not _SCOPE_TOKEN.fullmatch(s)]
        if bad:
            raise ValueError(f"not OAuth scope tokens: {bad}")
        if "offline_access" in scopes:
            raise ValueError("offline_access is for the authorization server to grant, not for a resource to require")
        return scopes

    @field_validator("OAUTH_RESOURCE_URL")
    @classmethod
    def _absolute(cls, url: str | None) -> str | None:
        if url is not None and not re.fullmatch(r"https?://[^/?#\s]+(/[^?#\s]*)?", url):
            raise ValueError("give an absolute http(s) URL without query or fragment, e.g. https://example.com/mcp")
        return url.rstrip("/") if url else url


get_auth_settings = settings_section(AuthSettings)
"""The validated ``OAUTH_*`` settings (cached until ``DJANGO_MCP`` changes)."""
