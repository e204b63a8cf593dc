"""Who may register an OAuth client by dynamic client registration (RFC 7591) without signing in."""

from __future__ import annotations

import ipaddress
import json
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

from django.db.models import Exists, OuterRef
from django.http import JsonResponse
from django.utils import timezone
from django_ratelimit.core import get_usage

from ..protocol.errors import McpJsonRpcError
from ..protocol.jsonrpc import parse_json
from .conf import get_auth_settings

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
            # Here: the oauth extra (django-oauth-toolkit) is optional.
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


MAX_BODY_BYTES = 16_384
"""The largest registration body read (a client's metadata is a few hundred bytes)."""
MAX_REDIRECT_URIS = 10
MAX_TEXT_CHARS = 2_048
"""The longest text in a registration (a name, a URI)."""
_TEXTS = ("client_name", "client_uri", "logo_uri", "tos_uri", "policy_uri", "scope", "token_endpoint_auth_method")
_LISTS = ("redirect_uris", "grant_types", "response_types", "contacts")


def registration_refusal(body: bytes, anonymous: bool) -> tuple[str, str, int] | None:
    """Why a registration body is refused before django-oauth-toolkit reads it, as RFC 7591 says it
    (``error``, ``error_description``, HTTP status); None when it may go on."""
    if len(body) > MAX_BODY_BYTES:
        return "invalid_client_metadata", f"The registration is larger than {MAX_BODY_BYTES} bytes", 413
    try:
        metadata = parse_json(body)  # the endpoint's own parser: depth, encoding, numbers
    except McpJsonRpcError as exc:
        return "invalid_client_metadata", f"Request body must be valid JSON ({exc.message})", 400
    if not isinstance(metadata, dict):
        return "invalid_client_metadata", "Request body must be a JSON object", 400
    bad_text = _bad_text(metadata)
    if bad_text is not None:
        return "invalid_client_metadata", bad_text, 400
    for name in _TEXTS:
        if name in metadata and not isinstance(metadata[name], str):
            return "invalid_client_metadata", f"{name} must be a string", 400
    for name in _LISTS:
        if name in metadata and not _strings(metadata[name]):
            return "invalid_client_metadata", f"{name} must be an array of strings", 400
    redirects = metadata.get("redirect_uris") or []
    if len(redirects) > MAX_REDIRECT_URIS:
        return "invalid_redirect_uri", f"At most {MAX_REDIRECT_URIS} redirect_uris", 400
    if anonymous and not all(public_redirect(uri) for uri in redirects):
        return "invalid_redirect_uri", "redirect_uris must be https, a loopback http address or an app's scheme", 400
    return None


def _bad_text(value: Any) -> str | None:
    """What is wrong with a text anywhere in ``value`` (too long, a lone surrogate, a NUL), or None."""
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, dict):
            pending += [*item.keys(), *item.values()]
        elif isinstance(item, list):
            pending += item
        elif isinstance(item, str):
            if len(item) > MAX_TEXT_CHARS:
                return f"A text of the registration is longer than {MAX_TEXT_CHARS} characters"
            if "\x00" in item or any("\ud800" <= ch <= "\udfff" for ch in item):
                return "The registration's texts must be valid Unicode without NUL characters"
    return None


def refuse_registration(request: Any) -> Any:
    """The answer to a registration refused before django-oauth-toolkit sees it (a JsonResponse), or None.

    Bounds on the body first (:func:`registration_refusal`); then, for an anonymous caller, the
    registrations its address may make (``OAUTH_REGISTRATION_RATE``): each one is a row kept.
    """
    anonymous = not request.user.is_authenticated
    refused = registration_refusal(request.body, anonymous)
    retry = None
    if refused is None and anonymous:
        retry = _past_rate(request)
        if retry is not None:
            refused = ("invalid_client_metadata", f"Too many registrations from this address; retry in {retry} s", 429)
    if refused is None:
        return None
    error, description, status = refused
    response = JsonResponse({"error": error, "error_description": description}, status=status)
    if retry is not None:
        response["Retry-After"] = str(retry)
    return response


def _past_rate(request: Any) -> int | None:
    """Seconds until the caller's address may register again, or None while it is within the rate."""
    rate = get_auth_settings().OAUTH_REGISTRATION_RATE
    if rate is None:
        return None
    usage = get_usage(request, group="django_mcp:registration", key="ip", rate=rate, increment=True)
    if usage is None or not usage["should_limit"]:
        return None
    return max(1, int(usage["time_left"]))


def clear_stale_registrations(older_than: timedelta) -> int:
    """Delete clients registered anonymously (dynamic registration, no user) more than ``older_than`` ago that
    never obtained a token for anyone: a registration a client gave up on, or a flood's. How many went."""
    # Here: the oauth extra (django-oauth-toolkit) is optional.
    from oauth2_provider.models import get_access_token_model, get_application_model, get_refresh_token_model

    applications = get_application_model()
    issued = get_access_token_model().objects.filter(application=OuterRef("pk"), user__isnull=False)
    refreshable = get_refresh_token_model().objects.filter(application=OuterRef("pk"))
    stale = applications.objects.filter(
        registration_source=applications.RegistrationSource.DCR,
        user__isnull=True,
        created__lt=timezone.now() - older_than,
    ).filter(~Exists(issued), ~Exists(refreshable))
    # The registration's own access token (RFC 7592) and any expired grant go with it (CASCADE); in batches,
    # so that a flood's hundred thousand rows do not make one huge delete.
    deleted = 0
    while batch := list(stale.values_list("pk", flat=True)[:500]):
        deleted += applications.objects.filter(pk__in=batch).delete()[1].get(applications._meta.label, 0)
    return deleted
