"""The handshake-era front (2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05) on the same endpoint.

``initialize`` opens an ``Mcp-Session-Id`` session (kept in Django's cache,
bound to its principal); later requests carry the id and are served by the
same :class:`~django_mcp.server.dispatch.Dispatcher` as 2026-07-28 requests —
the difference lives here: envelope, session, negotiation, the ``GET`` stream,
``DELETE``, and asking the client with real server-to-client requests whose
answers are POSTed back (to any worker: the Channels layer routes them).
Extensions (tasks) are a 2026-07-28 feature: a handshake-era client sees none.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from channels.layers import get_channel_layer
from django.core.handlers.wsgi import WSGIRequest
from django.http import HttpRequest, HttpResponse, HttpResponseBase

from ..conf import get_settings
from ..protocol.errors import (
    INTERNAL_ERROR,
    INVALID_REQUEST,
    McpJsonRpcError,
    invalid_params,
    method_not_found,
)
from ..protocol.handshake import (
    HANDSHAKE_ONLY_METHODS,
    MODERN_ONLY_METHODS,
    SESSION_HEADER,
    check_version_header,
    negotiate,
)
from ..protocol.jsonrpc import LOG_LEVELS, RequestMeta, parse_message, readable_id
from ..protocol.validation import Rejection, check_origin
from ..server import telemetry
from ..server.access import avisible
from ..server.caller import caller_of, principal_digest
from ..server.listen import CONTROL_TYPE, ListenStream, admit_stream
from ..server.notify import has_channel_layer, resource_group
from ..server.rates import aenforce_request_rate
from ..server.request import McpRequest, needs_asgi
from . import asking, sessions
from .http import aresolve_user, origin_allowed, warn_wsgi_once
from .respond import Outbox, aensure_started, arespond, atraced
from .responses import accepted, error_json, json_response, sse_response

if TYPE_CHECKING:
    from .mounted import MountedServer

logger = logging.getLogger("django_mcp")

SESSION_NOT_FOUND = -32001


def _not_found() -> McpJsonRpcError:
    return McpJsonRpcError(
        SESSION_NOT_FOUND, "Session not found: it ended or expired; send initialize again", http_status=404
    )


def _missing_session() -> McpJsonRpcError:
    return McpJsonRpcError(INVALID_REQUEST, "Bad Request: Mcp-Session-Id header is required", http_status=400)


def principal(server: MountedServer, http_request: HttpRequest) -> str:
    """The session owner for this HTTP request (the same principal naming as task bindings)."""
    return principal_digest(server.urls_namespace, caller_of(http_request).key)


def limit_key(server: MountedServer, http_request: HttpRequest) -> str:
    """Whom per-caller limits count for this HTTP request (:attr:`Caller.limit_key`), as a digest."""
    return principal_digest(server.urls_namespace, caller_of(http_request).limit_key)


def _meta(
    version: str, capabilities: dict[str, Any], session: sessions.McpSession | None, progress: Any = None
) -> RequestMeta:
    return RequestMeta.model_validate(
        {
            "io.modelcontextprotocol/protocolVersion": version,
            "io.modelcontextprotocol/clientCapabilities": capabilities,
            "io.modelcontextprotocol/clientInfo": session.client_info if session is not None else None,
            "io.modelcontextprotocol/logLevel": session.log_level if session is not None else None,
            "progressToken": progress if isinstance(progress, str | int) and not isinstance(progress, bool) else None,
        }
    )


async def asession_for(
    server: MountedServer, http_request: HttpRequest, headers: Mapping[str, str]
) -> sessions.McpSession:
    """The request's session: 400 without the header, 404 for an unknown, ended or someone else's."""
    session_id = headers.get(SESSION_HEADER)
    if session_id is None:
        raise _missing_session()
    session = await sessions.aload(session_id.strip(), principal(server, http_request))
    if session is None:
        raise _not_found()
    return session


# -- POST ------------------------------------------------------------------------------------


async def aserve_post(
    server: MountedServer, http_request: HttpRequest, obj: Any, headers: Mapping[str, str]
) -> HttpResponseBase:
    """Serve one handshake-era POST body (decoded by the ladder): a reply, ``initialize``, or a session request."""
    await aresolve_user(http_request)
    admitted = await _aadmit(server, http_request, obj, headers)
    if isinstance(admitted, HttpResponseBase):
        return admitted
    request, session = admitted
    outbox = Outbox()
    request.set_sink(outbox.put)
    if not request.served_by_asgi:
        request.set_asker(_acannot_ask_without_a_stream)
    return await arespond(request, outbox, _aserve(server, request, session))


async def _aadmit(
    server: MountedServer, http_request: HttpRequest, obj: Any, headers: Mapping[str, str]
) -> tuple[McpRequest, sessions.McpSession] | HttpResponseBase:
    """The :class:`McpRequest` to serve, or the finished response (a reply, ``initialize``, a notification)."""
    if isinstance(obj, dict) and "method" not in obj and ("result" in obj or "error" in obj):
        try:
            session = await asession_for(server, http_request, headers)
        except McpJsonRpcError as exc:
            raise Rejection(exc, None) from None
        await asking.adeliver_reply(session, obj)
        return accepted()
    try:
        message = parse_message(obj)
    except McpJsonRpcError as exc:
        raise Rejection(exc, readable_id(obj)) from None
    served = get_settings().handshake_versions
    if message.method == "initialize":
        if message.is_notification:
            return accepted()
        return await _ainitialize(server, http_request, message.id, message.params, served)
    try:
        session = await asession_for(server, http_request, headers)
        version = check_version_header(headers, session.protocol_version, served)
    except McpJsonRpcError as exc:
        raise Rejection(exc, message.id) from None
    if message.is_notification:
        if message.method == "notifications/cancelled":
            asking.cancel_running(session, message.params.get("requestId"))
        telemetry.notified(message.method, message.params, headers, version)
        return accepted()
    if message.method in MODERN_ONLY_METHODS:
        error = method_not_found(message.method)
        error.http_status = 200  # in-band inside a live session
        raise Rejection(error, message.id)
    meta_in = message.params.get("_meta")
    progress = meta_in.get("progressToken") if isinstance(meta_in, dict) else None
    request = McpRequest(
        http_request,
        request_id=message.id,
        method=message.method,
        params=message.params,
        meta=_meta(version, session.capabilities, session, progress),
        headers=headers,
        namespace=server.urls_namespace,
        era="handshake",
    )
    request.set_asker(asking.ClientAsker(session, request).ask)
    return request, session


async def _acannot_ask_without_a_stream(requests: Any) -> dict[str, Any]:
    raise needs_asgi("Asking a handshake-era client mid-request (a request on the response stream)")


async def _aserve(server: MountedServer, request: McpRequest, session: sessions.McpSession) -> dict[str, Any]:
    await aensure_started(server, request)

    async def aserve() -> dict[str, Any]:
        result = await aserve_handshake_only(server, request, session)
        if result is None:
            served = await server.dispatcher.adispatch(request)
            assert not isinstance(served, ListenStream)  # subscriptions/listen is refused in this era
            result = served
        return result

    work = asyncio.ensure_future(atraced(server, request, aserve))
    asking.track(session, request.id, work)  # notifications/cancelled cancels this, not the response
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
    return handshake_result(result)


def _being_cancelled() -> bool:
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


async def _ainitialize(
    server: MountedServer, http_request: HttpRequest, request_id: Any, params: dict[str, Any], served: tuple[str, ...]
) -> HttpResponseBase:
    capabilities = params.get("capabilities", {})
    if not isinstance(params.get("protocolVersion"), str) or not isinstance(capabilities, dict):
        error = invalid_params("Invalid params for initialize: protocolVersion (string) and capabilities are required")
        return error_json(error, request_id)
    version = negotiate(params["protocolVersion"], served)
    owner, counted_as = principal(server, http_request), limit_key(server, http_request)
    counted = McpRequest(
        http_request, request_id=request_id, method="initialize", params=params, meta=_meta(version, capabilities, None)
    )
    try:
        await aenforce_request_rate(counted)  # RATE_LIMIT counts initialize too: a session costs a place
        session = await sessions.acreate(owner, version, capabilities, params.get("clientInfo"), counted_as)
    except McpJsonRpcError as exc:
        return error_json(exc, request_id)
    probe = McpRequest(
        http_request,
        request_id=request_id,
        method="initialize",
        params=params,
        meta=_meta(version, capabilities, session),
        namespace=server.urls_namespace,
        era="handshake",
    )

    async def answer() -> dict[str, Any]:
        context = server.dispatcher.context_for(probe)
        result: dict[str, Any] = {
            "protocolVersion": version,
            "capabilities": context.capabilities,
            "serverInfo": context.options.server_info(),
        }
        if context.options.instructions is not None:
            result["instructions"] = context.options.instructions
        return result

    result = await atraced(server, probe, answer)
    response = json_response({"jsonrpc": "2.0", "id": request_id, "result": result})
    response["Mcp-Session-Id"] = session.id
    return response


async def aserve_handshake_only(
    server: MountedServer, context: McpRequest, session: sessions.McpSession
) -> dict[str, Any] | None:
    """``ping``, ``logging/setLevel``, ``resources/subscribe|unsubscribe``; None for every other method."""
    method, params = context.method, context.params
    if method not in HANDSHAKE_ONLY_METHODS:
        return None
    if method == "ping":
        return {}
    if method == "logging/setLevel":
        level = params.get("level")
        if level not in LOG_LEVELS:
            raise invalid_params(f"Invalid params for logging/setLevel: level must be one of {', '.join(LOG_LEVELS)}")
        session.log_level = level
        await sessions.asave(session)
        return {}
    uri = params.get("uri")
    if not isinstance(uri, str):
        raise invalid_params(f"Invalid params for {method}: uri must be a string")
    if not len(server.resources) or not has_channel_layer():
        raise method_not_found(method)
    found = server.resources.resolve(uri)
    if found is None or not await avisible(context, [found[0]]):  # one it may not see does not exist
        raise invalid_params(f"Resource not found: {uri}", {"uri": uri})
    subscribe = method == "resources/subscribe"
    if subscribe and uri not in session.subscriptions:
        session.subscriptions.append(uri)
    elif not subscribe and uri in session.subscriptions:
        session.subscriptions.remove(uri)
    await sessions.asave(session)
    layer = get_channel_layer()
    if layer is not None:
        with contextlib.suppress(Exception):  # the GET stream also reads the list when it opens
            await layer.group_send(
                session.group,
                {"type": CONTROL_TYPE, "op": "join" if subscribe else "leave", "group": resource_group(uri)},
            )
    return {}


def handshake_result(result: dict[str, Any]) -> dict[str, Any]:
    """A handshake-era result: no ``resultType``, no modern ``_meta`` keys."""
    result.pop("resultType", None)
    meta = result.get("_meta")
    if isinstance(meta, dict):
        meta = {k: v for k, v in meta.items() if not k.startswith("io.modelcontextprotocol/")}
        if meta:
            result["_meta"] = meta
        else:
            result.pop("_meta")
    return result


# -- GET and DELETE -----------------------------------------------------------------------------------


async def aserve_session_request(
    server: MountedServer, http_request: HttpRequest, headers: Mapping[str, str]
) -> HttpResponseBase:
    """A session's ``DELETE``, or its ``GET`` stream: list changes and subscribed resource updates, from any process."""
    check_origin(headers.get("origin"), lambda origin: origin_allowed(origin, http_request))
    await aresolve_user(http_request)
    if http_request.method == "DELETE":
        return await _aend_session(server, http_request, headers)
    if isinstance(http_request, WSGIRequest):
        # No stream outlives a WSGI response: the transport's answer for "no GET stream here".
        warn_wsgi_once()
        return HttpResponse(status=405, headers={"Allow": "POST, DELETE"})
    accept = headers.get("accept")
    if accept is not None and "text/event-stream" not in accept and "*/*" not in accept:
        raise McpJsonRpcError(INVALID_REQUEST, "Not acceptable: the GET stream is text/event-stream", http_status=406)
    await server.astarted()
    stream = await _aopen_stream(server, http_request, headers)
    admit_stream(stream, limit_key(server, http_request))
    return sse_response(stream.aevents())


async def _aopen_stream(server: MountedServer, http_request: HttpRequest, headers: Mapping[str, str]) -> ListenStream:
    session = await asession_for(server, http_request, headers)
    probe = McpRequest(
        http_request,
        request_id=None,
        method="GET",
        params={},
        meta=_meta(session.protocol_version, session.capabilities, session),
        namespace=server.urls_namespace,
        era="handshake",
    )
    context = server.dispatcher.context_for(probe)
    groups = [session.group]
    for registry in (context.tools, context.prompts, context.resources):
        if context.capabilities.get(registry.kind, {}).get("listChanged"):
            groups.append(registry.channel_group)
    groups += [resource_group(uri) for uri in session.subscriptions]
    settings = get_settings()
    return ListenStream(
        None,
        {},
        groups,
        [],
        result_meta={},
        keepalive_seconds=settings.LISTEN_KEEPALIVE_SECONDS,
        queue_size=settings.LISTEN_QUEUE_SIZE,
        handshake=True,
    )


async def _aend_session(server: MountedServer, http_request: HttpRequest, headers: Mapping[str, str]) -> HttpResponse:
    session = await asession_for(server, http_request, headers)
    await sessions.adelete(session)
    return HttpResponse(status=200)
