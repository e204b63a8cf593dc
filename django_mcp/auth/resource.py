"""The endpoint's canonical URL (its RFC 8707 resource) and where its RFC 9728 metadata lives."""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from django.utils.encoding import escape_uri_path

if TYPE_CHECKING:
    from django.http import HttpRequest

PRM_PATH = "/.well-known/oauth-protected-resource"


def resource_url(request: HttpRequest, configured: str | None) -> str:
    """``configured``, or the URL this request reached the endpoint at (``/mcp/`` and ``/mcp`` are one resource)."""
    if configured:
        return configured
    # What build_absolute_uri(request.path) gives, at a fraction of its cost (it runs for every request).
    return f"{request.scheme}://{request.get_host()}{escape_uri_path(request.path)}".rstrip("/")


def metadata_url(resource: str) -> str:
    """RFC 9728 §3.1: the well-known segment goes between the host and the resource's path."""
    parts = urlsplit(resource)
    return f"{parts.scheme}://{parts.netloc}{PRM_PATH}{parts.path.rstrip('/')}"


def covers(audience: str, resource: str) -> bool:
    """Whether a token issued for ``audience`` may be used at ``resource``: the same URL, or a URL whose
    path is a whole-segment prefix of it (a token for ``https://host`` serves ``https://host/mcp``,
    never ``https://host/mcp-admin`` for ``https://host/mcp``). Scheme and host compare case-insensitively."""
    a, r = urlsplit(audience), urlsplit(resource)
    if (a.scheme.lower(), a.netloc.lower()) != (r.scheme.lower(), r.netloc.lower()) or a.query or a.fragment:
        return False
    prefix, path = a.path.rstrip("/"), r.path.rstrip("/")
    return path == prefix or path.startswith(prefix + "/")
