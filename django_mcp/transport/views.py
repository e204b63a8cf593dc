"""The django-ninja endpoint: every request runs the ladder once here, then goes to its era's front."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from functools import partial
from typing import TYPE_CHECKING

from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse, HttpResponseBase
from ninja import NinjaAPI
from ninja.errors import AuthenticationError

from ..conf import get_settings
from ..protocol.errors import INTERNAL_ERROR, INVALID_REQUEST, McpJsonRpcError
from ..protocol.validation import HandshakeBody, Rejection, admit
from ..server.lifecycle import lifecycle
from ..token_errors import InvalidToken, TokenServiceUnavailable
from . import handshake, streamable
from .http import allowed_methods, origin_allowed, read_body, request_headers
from .responses import database_unavailable, error_json

if TYPE_CHECKING:
    from .mounted import MountedServer

logger = logging.getLogger("django_mcp")


class _McpApi(NinjaAPI):
    """Ninja, minus the scratch response it builds for every request.

    Ninja prepares an ``HttpResponse`` for an operation to fill (status, headers, cookies) before
    calling it. Every operation here returns its own response and takes no ``response`` argument, so
    that one is never read: it is left unbuilt (an instance without ``__init__``, fresh per request;
    reading its headers or content would raise instead of answering something half-made).
    """

    def create_temporal_response(self, request: HttpRequest) -> HttpResponse:
        return HttpResponse.__new__(HttpResponse)


def build_api(server: MountedServer) -> NinjaAPI:
    """The NinjaAPI serving ``server`` (the server builds it once)."""
    api = _McpApi(urls_namespace=server.urls_namespace, docs_url=None, openapi_url=None)

    @api.post("", auth=server.auth, include_in_schema=False)
    async def mcp_post(request: HttpRequest) -> HttpResponseBase:
        return uncompressed_stream(request, await ahandle_post(server, request))

    @api.api_operation(["GET", "DELETE"], "", auth=server.auth, include_in_schema=False)
    async def mcp_session(request: HttpRequest) -> HttpResponseBase:
        return uncompressed_stream(request, await ahandle_session_request(server, request))

    @api.api_operation(["PUT", "PATCH"], "", include_in_schema=False)
    def mcp_not_allowed(request: HttpRequest) -> HttpResponse:
        return HttpResponse(status=405, headers={"Allow": allowed_methods()})

    @api.api_operation(["OPTIONS"], "", include_in_schema=False)
    def mcp_options(request: HttpRequest) -> HttpResponse:
        # What the endpoint takes. A browser's CORS preflight is answered before it gets here, by
        # django-cors-headers where the project allows other origins (django_mcp.cors); else this
        # answer, without Access-Control-* headers, tells the browser no.
        return HttpResponse(status=204, headers={"Allow": f"{allowed_methods()}, OPTIONS"})

    @api.exception_handler(OperationalError)
    @api.exception_handler(InterfaceError)
    def database_down(request: HttpRequest, exc: Exception) -> HttpResponse:
        # E.g. an auth that reads the database while it is down: a JSON-RPC error, not a traceback page.
        return error_json(database_unavailable(exc), None)

    @api.exception_handler(AuthenticationError)
    @api.exception_handler(InvalidToken)
    def unauthorized(request: HttpRequest, exc: Exception) -> HttpResponse:
        challenge = getattr(server.auth, "unauthorized", None)  # an OAuth resource server's own 401 (BearerAuth)
        if callable(challenge):
            return error_json(challenge(request, exc if isinstance(exc, InvalidToken) else None), None)
        error = McpJsonRpcError(INVALID_REQUEST, "Unauthorized: valid credentials are required", http_status=401)
        return error_json(error, None, {"WWW-Authenticate": get_settings().WWW_AUTHENTICATE})

    @api.exception_handler(McpJsonRpcError)
    def refused(request: HttpRequest, exc: McpJsonRpcError) -> HttpResponse:
        return error_json(exc, None)  # e.g. BearerAuth's 403 for a token without the endpoint's scopes

    @api.exception_handler(TokenServiceUnavailable)
    def token_service_unavailable(request: HttpRequest, exc: Exception) -> HttpResponse:
        logger.warning("Cannot check a bearer token: %s", exc)
        return error_json(
            McpJsonRpcError(INTERNAL_ERROR, "Cannot check the access token now: try again shortly", http_status=503),
            None,
        )

    return api


def uncompressed_stream(request: HttpRequest, response: HttpResponseBase) -> HttpResponseBase:
    """``response``; an event stream is kept from ``GZipMiddleware``, as if the client took no gzip.

    Django compresses each chunk of an async stream as a gzip member of its own, and clients (httpx,
    curl) decode only the first: the stream would end after its first event. JSON answers are still
    compressed.
    """
    if response.streaming:
        request.META.pop("HTTP_ACCEPT_ENCODING", None)
    return response


async def ahandle_post(server: MountedServer, request: HttpRequest) -> HttpResponseBase:
    """Run the ladder over one POST, then hand it to its era's front."""
    request.get_host()  # enforce ALLOWED_HOSTS (DNS rebinding) even without CommonMiddleware
    lifecycle.install_signal_handlers()
    return await aserve_message(server, request, request_headers(request))


async def aserve_message(server: MountedServer, request: HttpRequest, headers: Mapping[str, str]) -> HttpResponseBase:
    """The ladder and the era's front for one message: what a POST gets once its host is accepted
    (and what stdio gets for each line)."""
    settings = get_settings()
    try:
        body = read_body(request, headers, settings.MAX_REQUEST_BYTES)
        admitted = admit(
            body,
            headers,
            origin_allowed=partial(origin_allowed, request=request),
            name_params=server.dispatcher.name_params,
            supported=settings.modern_versions,
            advertised=settings.modern_versions or settings.handshake_versions,
            handshake_versions=settings.handshake_versions,
        )
        if isinstance(admitted, HandshakeBody):
            return await handshake.aserve_post(server, request, admitted.body, headers)
    except Rejection as rejection:
        return error_json(rejection.error, rejection.request_id)
    except McpJsonRpcError as exc:  # the handshake front's own refusals (e.g. the session store down)
        return error_json(exc, None)
    return await streamable.aserve_post(server, request, admitted, headers)


async def ahandle_session_request(server: MountedServer, request: HttpRequest) -> HttpResponseBase:
    """A handshake-era session's ``GET`` stream or ``DELETE``; 405 where no handshake revision is served."""
    if not get_settings().handshake_versions or "Mcp-Session-Id" not in request.headers:
        # 2026-07-28 has no GET stream and no session to DELETE: only a handshake-era session has them.
        return HttpResponse(status=405, headers={"Allow": allowed_methods()})
    request.get_host()
    lifecycle.install_signal_handlers()
    try:
        return await handshake.aserve_session_request(server, request, request_headers(request))
    except Rejection as rejection:
        return error_json(rejection.error, rejection.request_id)
    except McpJsonRpcError as exc:
        return error_json(exc, None)
