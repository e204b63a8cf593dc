"""Sign-in for the MCP endpoint: OAuth 2.1 bearer tokens (the endpoint as a resource server).

``DJANGO_MCP["AUTH"] = "django_mcp.auth.BearerAuth"`` guards every server with tokens of this
project's django-oauth-toolkit (``pip install django-mcp-endpoint[oauth]``), of an external
issuer (``OAUTH_JWT``), or personal tokens made in the admin. ``include("django_mcp.auth.urls")``
at the site root serves the RFC 9728 metadata (and, with django-oauth-toolkit installed, the
authorization server). See docs/sign-in.md.
"""

from __future__ import annotations

from .bearer import BearerAuth
from .server_settings import authorization_server_settings
from .tokens import InvalidToken, TokenVerifier, VerifiedToken
from .verifiers import DjangoOAuthToolkitVerifier, JwtVerifier, PersonalTokenVerifier, user_for_claims

__all__ = [
    "BearerAuth",
    "DjangoOAuthToolkitVerifier",
    "InvalidToken",
    "JwtVerifier",
    "PersonalTokenVerifier",
    "TokenVerifier",
    "VerifiedToken",
    "authorization_server_settings",
    "user_for_claims",
]
