"""What both eras read from an HTTP request: headers, the body within its limit, the Origin verdict, the user."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from urllib.parse import urlsplit

from asgiref.sync import sync_to_async
from django.conf import settings as django_settings
from django.http import HttpRequest
from django.http.request import HttpHeaders

from ..compat import has_body_stream
from ..conf import get_settings
from ..pooled import give_back_pooled_connections
from ..protocol.errors import INVALID_REQUEST, McpJsonRpcError
from ..protocol.validation import Rejection

logger = logging.getLogger("django_mcp")

_LOOPBACK = {"localhost", "127.0.0.1", "::1"}


def allowed_methods() -> str:
    """The ``Allow`` header: 2026-07-28 has no GET stream and no sessions to DELETE; the handshake era has both."""
    return "GET, POST, DELETE" if get_settings().handshake_versions else "POST"


def origin_allowed(origin: str, request: HttpRequest) -> bool:
    """Same-origin, listed in ``ALLOWED_ORIGINS`` (``"*"`` for any), or loopback under DEBUG.

    Same-origin compares the Origin with the Host header, which only means something when
    ``ALLOWED_HOSTS`` pins the host: with ``"*"`` there a DNS-rebinding page chooses both, so then
    only the listed origins (and loopback under DEBUG) pass (check ``django_mcp.W008``).
    """
    allowed = get_settings().ALLOWED_ORIGINS
    if "*" in allowed or origin in allowed:
        return True
    parts = urlsplit(origin)
    if parts.netloc and parts.netloc == request.get_host() and "*" not in django_settings.ALLOWED_HOSTS:
        return True
    return bool(django_settings.DEBUG and parts.hostname in _LOOPBACK)


def request_headers(request: HttpRequest) -> dict[str, str]:
    """The request's headers with lower-case names (what ``request.headers`` holds, built for less)."""
    headers = {
        name[5:].replace("_", "-").lower(): value for name, value in request.META.items() if name.startswith("HTTP_")
    }
    for name in HttpHeaders.UNPREFIXED_HEADERS:
        if name in request.META:
            headers[name.replace("_", "-").lower()] = request.META[name]
    return headers


def _too_big(limit: int) -> Rejection:
    error = McpJsonRpcError(INVALID_REQUEST, f"Request body too large: at most {limit} bytes", http_status=413)
    return Rejection(error)


def read_body(request: HttpRequest, headers: Mapping[str, str], limit: int) -> bytes:
    """The body, or a 413 rejection past ``limit`` bytes (never holding more than ``limit + 1``)."""
    declared = headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise _too_big(limit)
    # read() (not .body) so at most limit+1 bytes are held in memory. The ASGI server has already
    # received the whole body by now (daphne buffers it): enforce the limit at the proxy too.
    # Mock requests (ninja's TestClient) have no stream, only a body.
    body = request.read(limit + 1) if has_body_stream(request) else request.body[: limit + 1]
    if len(body) > limit:
        raise _too_big(limit)
    return body


async def aresolve_user(request: HttpRequest) -> None:
    """Resolve the session user once, here, so handlers and bindings can read it from any context."""
    auser = getattr(request, "auser", None)
    if auser is not None:
        request.user = await auser()
        if getattr(getattr(request, "session", None), "session_key", None) is not None:
            # Its session was read in the request's thread, which may keep the pooled connection it took
            # while the request waits on the store's threads (same pool) or holds a stream open.
            await sync_to_async(give_back_pooled_connections)()


def warn_wsgi_once() -> None:
    """Say once per process what serving over WSGI gives up."""
    global _warned_wsgi
    if not _warned_wsgi:
        _warned_wsgi = True
        logger.warning(
            "django-mcp is served over WSGI in this process: progress and log messages arrive with the "
            "result, task bodies run only on the worker fleet (task_backend), and listen streams, the GET "
            "stream and asking a handshake-era client mid-request are refused. Serve asgi.py with an ASGI "
            "server (daphne, uvicorn) for all of it."
        )


_warned_wsgi = False  # process-wide by nature: one line per process
