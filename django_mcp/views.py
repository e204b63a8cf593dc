"""The django-ninja endpoint: one POST view that answers JSON or SSE."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
from collections.abc import AsyncIterator, Coroutine, Mapping
from functools import partial
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from django.conf import settings as django_settings
from django.core.handlers.wsgi import WSGIRequest
from django.core.serializers.json import DjangoJSONEncoder
from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse, HttpResponseBase, StreamingHttpResponse
from django.http.request import HttpHeaders
from ninja import NinjaAPI
from ninja.errors import AuthenticationError

from . import handshake
from .auth.tokens import InvalidToken, TokenServiceUnavailable
from .conf import get_settings
from .protocol import sse
from .protocol.errors import INTERNAL_ERROR, INVALID_REQUEST, McpJsonRpcError
from .protocol.handshake import is_handshake_era
from .protocol.jsonrpc import WireJSONEncoder, error_response, parse_json, result_response
from .protocol.ladder import Rejection, admit_message, check_media_types, check_origin
from .server import telemetry
from .server.context import McpRequest, needs_asgi
from .server.lifecycle import lifecycle
from .server.listen import ListenStream, admit_stream
from .server.notify import throttle

if TYPE_CHECKING:
    from .endpoint import McpServer

logger = logging.getLogger("django_mcp")

_LOOPBACK = {"localhost", "127.0.0.1", "::1"}
Outcome = tuple[dict[str, Any], int, "Mapping[str, str] | None"]  # a JSON-RPC response, its HTTP status and headers


class _McpApi(NinjaAPI):
    """Ninja, minus the scratch response it builds for every request.

    Ninja prepares an ``HttpResponse`` for an operation to fill (status, headers, cookies) before
    calling it. Every operation here returns its own response and takes no ``response`` argument, so
    that one is never read: it is left unbuilt (an instance without ``__init__``, fresh per request;
    reading its headers or content would raise instead of answering something half-made).
    """

    def create_temporal_response(self, request: HttpRequest) -> HttpResponse:
        return HttpResponse.__new__(HttpResponse)


def build_api(server: McpServer) -> NinjaAPI:
    """The NinjaAPI serving ``server`` (the server builds it once)."""
    api = _McpApi(urls_namespace=server.urls_namespace, docs_url=None, openapi_url=None)

    @api.post("", auth=server.auth, include_in_schema=False)
    async def mcp_post(request: HttpRequest) -> HttpResponseBase:
        return await handle_post(server, request)

    @api.api_operation(["GET", "DELETE"], "", auth=server.auth, include_in_schema=False)
    async def mcp_session(request: HttpRequest) -> HttpResponseBase:
        return await handle_session_request(server, request)

    @api.api_operation(["PUT", "PATCH"], "", include_in_schema=False)
    def mcp_not_allowed(request: HttpRequest) -> HttpResponse:
        return HttpResponse(status=405, headers={"Allow": _allowed()})

    @api.exception_handler(OperationalError)
    @api.exception_handler(InterfaceError)
    def database_unavailable(request: HttpRequest, exc: Exception) -> HttpResponse:
        # E.g. an auth that reads the database while it is down: a JSON-RPC error, not a traceback page.
        return _error(_database_unavailable(exc), None)

    @api.exception_handler(AuthenticationError)
    @api.exception_handler(InvalidToken)
    def unauthorized(request: HttpRequest, exc: Exception) -> HttpResponse:
        challenge = getattr(server.auth, "unauthorized", None)  # an OAuth resource server's own 401 (BearerAuth)
        if callable(challenge):
            return _error(challenge(request, exc if isinstance(exc, InvalidToken) else None), None)
        error = McpJsonRpcError(INVALID_REQUEST, "Unauthorized: valid credentials are required", http_status=401)
        return _error(error, None, {"WWW-Authenticate": get_settings().WWW_AUTHENTICATE})

    @api.exception_handler(McpJsonRpcError)
    def refused(request: HttpRequest, exc: McpJsonRpcError) -> HttpResponse:
        return _error(exc, None)  # e.g. BearerAuth's 403 for a token without the endpoint's scopes

    @api.exception_handler(TokenServiceUnavailable)
    def token_service_unavailable(request: HttpRequest, exc: Exception) -> HttpResponse:
        logger.warning("Cannot check a bearer token: %s", exc)
        return _error(
            McpJsonRpcError(INTERNAL_ERROR, "Cannot check the access token now: try again shortly", http_status=503),
            None,
        )

    return api


def _allowed() -> str:
    # 2026-07-28 has no GET stream and no sessions to DELETE; the handshake era has both.
    return "GET, POST, DELETE" if get_settings().handshake_versions else "POST"


async def handle_session_request(server: McpServer, request: HttpRequest) -> HttpResponseBase:
    """A handshake-era session's ``GET`` stream or ``DELETE``; 405 where no handshake revision is served."""
    if not get_settings().handshake_versions or "Mcp-Session-Id" not in request.headers:
        # 2026-07-28 has no GET stream and no session to DELETE: only a handshake-era session has them.
        return HttpResponse(status=405, headers={"Allow": _allowed()})
    request.get_host()
    lifecycle.install_signal_handlers()
    headers = _headers(request)
    try:
        check_origin(headers.get("origin"), lambda origin: origin_allowed(origin, request))
        await _resolve_user(request)
        if request.method == "DELETE":
            return await handshake.end_session(server, request, headers)
        if isinstance(request, WSGIRequest):
            # No stream outlives a WSGI response: the transport's answer for "no GET stream here".
            _warn_wsgi_once()
            return HttpResponse(status=405, headers={"Allow": "POST, DELETE"})
        accept = headers.get("accept")
        if accept is not None and "text/event-stream" not in accept and "*/*" not in accept:
            raise McpJsonRpcError(
                INVALID_REQUEST, "Not acceptable: the GET stream is text/event-stream", http_status=406
            )
        await server.started()
        stream = await handshake.open_stream(server, request, headers)
        admit_stream(stream, handshake.limit_key(server, request))
    except Rejection as rejection:
        return _error(rejection.error, rejection.request_id)
    except McpJsonRpcError as exc:
        return _error(exc, None)
    return _sse(stream.events())


class _JsonEncoder(WireJSONEncoder, DjangoJSONEncoder):
    """The wire format (never fails on a lone surrogate or a non-finite float), plus Django's types."""


_RESPONSE_ENCODER = _JsonEncoder()


def _json(payload: dict[str, Any], status: int = 200, headers: Mapping[str, str] | None = None) -> HttpResponse:
    response = HttpResponse(
        _RESPONSE_ENCODER.encode(payload).encode(), status=status, content_type="application/json", headers=headers
    )
    if status == 503:
        # An outage's answer: what failed is logged once a minute (throttled) where it failed, so Django's
        # request logger must not add a line per request (the flag its log_response() sets and reads).
        response._has_been_logged = True  # type: ignore[attr-defined]
    return response


def _error(
    exc: McpJsonRpcError, request_id: str | int | None, headers: Mapping[str, str] | None = None
) -> HttpResponse:
    return _json(error_response(request_id, exc), exc.http_status, headers or exc.headers)


def _database_unavailable(exc: Exception, method: str | None = None) -> McpJsonRpcError:
    # The driver's text (SQL fragments, hosts) is logged, never sent; during an outage, once a minute.
    throttle.log(logger, logging.WARNING, "database", "Database unavailable (serving %s): %s", method or "-", exc)
    return McpJsonRpcError(INTERNAL_ERROR, "Database unavailable: try again shortly", http_status=503)


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


def _headers(request: HttpRequest) -> dict[str, str]:
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


def _read_body(request: HttpRequest, headers: dict[str, str], limit: int) -> bytes:
    declared = headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise _too_big(limit)
    # read() (not .body) so at most limit+1 bytes are held in memory. The ASGI server has already
    # received the whole body by now (daphne buffers it): enforce the limit at the proxy too.
    # Mock requests (ninja's TestClient) have no stream, only a body.
    body = request.read(limit + 1) if hasattr(request, "_stream") else request.body[: limit + 1]
    if len(body) > limit:
        raise _too_big(limit)
    return body


async def handle_post(server: McpServer, request: HttpRequest) -> HttpResponseBase:
    """Run the validation ladder over one POST, hand it to its era's front, and answer JSON or SSE."""
    request.get_host()  # enforce ALLOWED_HOSTS (DNS rebinding) even without CommonMiddleware
    lifecycle.install_signal_handlers()
    headers = _headers(request)
    settings = get_settings()
    outbox = _Outbox()
    try:
        body = _read_body(request, headers, settings.MAX_REQUEST_BYTES)
        # The first rungs of the ladder are the same in both eras; the body is decoded once.
        check_origin(headers.get("origin"), lambda origin: origin_allowed(origin, request))
        check_media_types(headers.get("content-type"), headers.get("accept"))
        obj = _parse(body)
        if settings.handshake_versions and is_handshake_era(obj, headers):
            await _resolve_user(request)
            try:
                context, session = await handshake.admit_post(server, request, obj, headers)
            except handshake.Handled as handled:
                return handled.response
            context.set_sink(outbox.put)
            if not context.served_by_asgi:
                context.set_asker(_cannot_ask_without_a_stream)
            return await _respond(context, outbox, _serve_handshake(server, context, session))
        admitted = admit_message(
            obj,
            headers,
            name_params=server.dispatcher.name_params,
            supported=settings.modern_versions,
            advertised=settings.modern_versions or settings.handshake_versions,
        )
    except Rejection as rejection:
        return _error(rejection.error, rejection.request_id)
    except McpJsonRpcError as exc:  # the handshake front's own refusals (e.g. the session store down)
        return _error(exc, None)
    if admitted.meta is None:
        # Notifications (e.g. notifications/cancelled) are accepted and ignored on HTTP.
        message = admitted.message
        telemetry.notified(message.method, message.params, headers, headers.get("mcp-protocol-version", ""))
        return handshake.accepted()
    await _resolve_user(request)
    message = admitted.message
    context = McpRequest(
        request,
        request_id=message.id,
        method=message.method,
        params=message.params,
        meta=admitted.meta,
        headers=headers,
        sink=outbox.put,
        namespace=server.urls_namespace,
    )
    return await _respond(context, outbox, _serve_modern(server, context))


def _parse(body: bytes) -> Any:
    try:
        return parse_json(body)
    except McpJsonRpcError as exc:
        raise Rejection(exc) from None


async def _resolve_user(request: HttpRequest) -> None:
    auser = getattr(request, "auser", None)
    if auser is not None:
        # Resolve the session user once, here, so handlers and bindings can read it from any context.
        request.user = await auser()


async def _serve_modern(server: McpServer, context: McpRequest) -> dict[str, Any] | ListenStream:
    await _started(server, context)
    if telemetry.active():
        return await telemetry.traced(context, partial(server.dispatcher.dispatch, context), _served_by(server))
    return await server.dispatcher.dispatch(context)


def _served_by(server: McpServer) -> telemetry.Known:
    def known(method: str, name: str) -> bool:
        return (server.tools if method == "tools/call" else server.prompts).get(name) is not None

    return known


async def _started(server: McpServer, context: McpRequest) -> None:
    if context.served_by_asgi:
        await server.started()
    else:
        # The extensions' startup hooks start loops that would end with this request's loop.
        _warn_wsgi_once()


def _warn_wsgi_once() -> None:
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


async def _cannot_ask_without_a_stream(requests: Any) -> dict[str, Any]:
    raise needs_asgi("Asking a handshake-era client mid-request (a request on the response stream)")


async def _serve_handshake(server: McpServer, context: McpRequest, session: Any) -> dict[str, Any] | ListenStream:
    await _started(server, context)

    async def serve() -> dict[str, Any]:
        result = await handshake.serve_handshake_only(server, context, session)
        if result is None:
            served = await server.dispatcher.dispatch(context)
            assert not isinstance(served, ListenStream)  # subscriptions/listen is refused in this era
            result = served
        return result

    work = asyncio.ensure_future(
        telemetry.traced(context, serve, _served_by(server)) if telemetry.active() else serve()
    )
    handshake.track(session, context.id, work)  # notifications/cancelled cancels this, not the response
    try:
        result = await work
    except asyncio.CancelledError:
        if not work.cancelled() or _being_cancelled():
            raise
        raise McpJsonRpcError(INTERNAL_ERROR, "Request cancelled by the client", http_status=200) from None
    except McpJsonRpcError as exc:
        # In a live session a JSON-RPC error is in-band (HTTP 200): handshake-era clients read any
        # other status as a broken transport. A lost database stays 503, and an OAuth challenge (403
        # insufficient_scope) keeps its status: that is how the client learns to step up.
        if exc.http_status not in (401, 403, 503):
            exc.http_status = 200
        raise
    return handshake.legacy_result(result)


def _being_cancelled() -> bool:
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


class _Outbox:
    """What a handler sends before its response; the first message, or the response, wakes the view."""

    def __init__(self) -> None:
        # Made by the first message: most requests send none (a queue is four deques, ~2.5 KB).
        self.queue: asyncio.Queue[dict[str, Any]] | None = None
        self.woken: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def put(self, message: dict[str, Any]) -> None:
        if self.queue is None:
            self.queue = asyncio.Queue()
        self.queue.put_nowait(message)
        self.wake()

    def wake(self, *_: Any) -> None:
        if not self.woken.done():
            self.woken.set_result(None)


async def _respond(
    context: McpRequest,
    outbox: _Outbox,
    serve: Coroutine[Any, Any, dict[str, Any] | ListenStream],
) -> HttpResponseBase:
    if not context.served_by_asgi:
        return await _respond_whole(context, outbox, serve)
    work = _start(_outcome(context, serve))
    if work.done():  # answered without waiting (e.g. tasks/get read on the loop)
        context.finish()
    else:
        work.add_done_callback(lambda _: context.finish())
        work.add_done_callback(outbox.wake)
        try:
            # Answer plain JSON unless the handler has something to say before it
            # finishes: every mandated 4xx is known before we commit to SSE.
            await outbox.woken
        except asyncio.CancelledError:  # the client went away: cancel the handler
            work.cancel()
            raise
    if work.done() and outbox.queue is None:
        outcome = work.result()
        if isinstance(outcome, ListenStream):
            return _sse(outcome.events())
        return _json(*outcome)
    assert outbox.queue is not None  # woken by a message (the handler has not finished, or sent one first)
    return _sse(_stream(outbox.queue, work))


def _start(work: Coroutine[Any, Any, Outcome | ListenStream]) -> asyncio.Future[Outcome | ListenStream]:
    """``work`` as a task, run at once up to its first wait (Python 3.12's eager start; on 3.11 scheduled).

    A request that never waits (``tasks/get`` read on the loop) is then answered without a task
    switch, and one that does starts its work without waiting a turn of the loop. A loop with a task
    factory (tracing, monitoring) makes the task itself, as before.
    """
    loop = asyncio.get_running_loop()
    if sys.version_info >= (3, 12) and loop.get_task_factory() is None:
        return asyncio.Task(work, loop=loop, eager_start=True)
    return loop.create_task(work)


async def _respond_whole(
    context: McpRequest, outbox: _Outbox, serve: Coroutine[Any, Any, dict[str, Any] | ListenStream]
) -> HttpResponse:
    """Under WSGI: the whole answer once the handler is done, its messages first (SSE) if it sent any.

    A WSGI server runs this view on an event loop that ends with the response, so nothing may
    stream after it: the handler runs to its end here.
    """
    try:
        outcome = await _outcome(context, serve)
    finally:
        context.finish()
    assert not isinstance(outcome, ListenStream)  # subscriptions/listen refuses a request served over WSGI
    if outbox.queue is None:
        return _json(*outcome)
    events = [sse.event(outbox.queue.get_nowait()) for _ in range(outbox.queue.qsize())]
    return HttpResponse(
        b"".join([*events, sse.event(outcome[0])]), content_type="text/event-stream", headers=sse.SSE_HEADERS
    )


def _sse(events: AsyncIterator[bytes]) -> StreamingHttpResponse:
    return StreamingHttpResponse(events, content_type="text/event-stream", headers=sse.SSE_HEADERS)


async def _outcome(
    context: McpRequest, serve: Coroutine[Any, Any, dict[str, Any] | ListenStream]
) -> Outcome | ListenStream:
    """The JSON-RPC response for a request (result or error, never an exception), or a listen stream."""
    try:
        result = await serve
        if isinstance(result, ListenStream):
            return result
        return result_response(context.id, result), 200, None
    except McpJsonRpcError as exc:
        return error_response(context.id, exc), exc.http_status, exc.headers
    except asyncio.CancelledError:
        raise
    except (OperationalError, InterfaceError) as exc:
        return error_response(context.id, _database_unavailable(exc, context.method)), 503, None
    except Exception:
        logger.exception("Internal error serving %s", context.method)
        return error_response(context.id, McpJsonRpcError(INTERNAL_ERROR, "Internal error")), 200, None


async def _stream(
    notifications: asyncio.Queue[dict[str, Any]], work: asyncio.Future[Outcome | ListenStream]
) -> AsyncIterator[bytes]:
    try:
        while not notifications.empty():
            yield sse.event(notifications.get_nowait())
        while not work.done():
            getter = asyncio.ensure_future(notifications.get())
            await asyncio.wait((work, getter), return_when=asyncio.FIRST_COMPLETED)
            if getter.done():
                yield sse.event(getter.result())
            else:
                getter.cancel()
        while not notifications.empty():
            yield sse.event(notifications.get_nowait())
        outcome = work.result()
        assert not isinstance(outcome, ListenStream)  # listen emits nothing before it streams
        yield sse.event(outcome[0])
    finally:
        # Client disconnect (CancelledError at a yield or await): stop the handler.
        if not work.done():
            work.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await work
