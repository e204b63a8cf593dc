"""Who may register an OAuth client by dynamic client registration (RFC 7591) without signing in."""

from __future__ import annotations

import ipaddress
import json
from typing import Any
from urllib.parse import urlsplit

_PUBLIC_GRANTS = {"authorization_code", "refresh_token"}


class PublicClientRegistration:
    """Anyone may register a *public* client: no secret (``token_endpoint_auth_method`` ``none``), the
    authorization code grant only, and redirect URIs that are https, a loopback http on any port, or
    an app's own scheme (e.g. ``cursor://``). Anything else needs a signed-in user.

    Anonymous registration of a confidential or ``client_credentials`` client would let anyone mint
    tokens that act for nobody; those are refused at the endpoint too, but are never issued here.
    """

    def has_permission(self, request: Any) -> bool:
        user = getattr(request, "user", None)
        if user is not None and user.is_authenticated:
            from oauth2_provider.dcr import IsAuthenticatedDCRPermission

            return bool(IsAuthenticatedDCRPermission().has_permission(request))
        try:
            metadata = json.loads(request.body)
        except (ValueError, UnicodeDecodeError):
            return True  # the view answers invalid_client_metadata
        if not isinstance(metadata, dict):
            return True
        grants = metadata.get("grant_types") or ["authorization_code"]
        responses = metadata.get("response_types") or ["code"]
        redirects = metadata.get("redirect_uris") or []
        if not all(_strings(value) for value in (grants, responses, redirects)):
            return False  # malformed: no anonymous registration of it
        return (
            metadata.get("token_endpoint_auth_method") == "none"
            and set(grants) <= _PUBLIC_GRANTS
            and set(responses) <= {"code"}
            and all(public_redirect(uri) for uri in redirects)
        )


def _strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


def public_redirect(uri: str) -> bool:
    """https anywhere, http only to a loopback address, or an app's private-use scheme (RFC 8252)."""
    parts = urlsplit(uri)
    if parts.scheme == "https":
        return bool(parts.hostname)
    if parts.scheme == "http":
        host = parts.hostname or ""
        if host == "localhost":
            return True
        try:
            return ipaddress.ip_address(host).is_loopback
        except ValueError:
            return False
    return parts.scheme not in {"", "javascript", "data", "file", "vbscript", "ftp", "ws", "wss"}
