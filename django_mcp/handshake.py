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
import json
import logging
import secrets
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from channels.layers import get_channel_layer
from django.http import HttpRequest, HttpResponse, HttpResponseBase

from . import sessions
from .conf import get_settings
from .protocol.errors import INTERNAL_ERROR, INVALID_REQUEST, McpJsonRpcError, invalid_params, method_not_found
from .protocol.handshake import (
    HANDSHAKE_ONLY_METHODS,
    MODERN_ONLY_METHODS,
    SESSION_HEADER,
    check_version_header,
    negotiate,
)
from .protocol.jsonrpc import LOG_LEVELS, RequestMeta, dumps, parse_message, readable_id
from .protocol.ladder import Rejection
from .server import telemetry
from .server.access import visible
from .server.context import McpRequest
from .server.listen import CONTROL_TYPE, ListenStream
from .server.mrtr import InputRequest
from .server.notify import has_channel_layer, resource_group, throttle, unavailable

if TYPE_CHECKING:
    from .endpoint import McpServer

logger = logging.getLogger("django_mcp")

SESSION_NOT_FOUND = -32001
REPLY_TYPE = "mcp.session.reply"
ASK_TIMEOUT_SECONDS = 600.0
_pending: dict[tuple[str, str], asyncio.Future[dict[str, Any]]] = {}


def _not_found() -> McpJsonRpcError:
    return McpJsonRpcError(
        SESSION_NOT_FOUND, "Session not found: it ended or expired; send initialize again", http_status=404
    )


def _missing_session() -> McpJsonRpcError:
    return McpJsonRpcError(INVALID_REQUEST, "Bad Request: Mcp-Session-Id header is required", http_status=400)


def principal(server: McpServer, request: HttpRequest) -> str:
    """The session owner for this HTTP request (the same principal naming as task bindings)."""
    probe = McpRequest(request, request_id=None, method="", params={}, meta=_meta("", {}, None))
    return sessions.owner_key(server.urls_namespace, probe.principal_key)


def limit_key(server: McpServer, request: HttpRequest) -> str:
    """Whom per-caller limits count for this HTTP request (:attr:`McpRequest.limit_key`), as a digest."""
    probe = McpRequest(request, request_id=None, method="", params={}, meta=_meta("", {}, None))
    return sessions.owner_key(server.urls_namespace, probe.limit_key)


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


async def session_for(server: McpServer, request: HttpRequest, headers: Mapping[str, str]) -> sessions.McpSession:
    """The request's session: 400 without the header, 404 for an unknown, ended or someone else's."""
    session_id = headers.get(SESSION_HEADER)
    if session_id is None:
        raise _missing_session()
    session = await sessions.load(session_id.strip(), principal(server, request))
    if session is None:
        raise _not_found()
    return session


# -- POST ------------------------------------------------------------------------------------


class Handled(Exception):  # noqa: N818 - carries a finished response out of the front
    def __init__(self, response: HttpResponseBase) -> None:
        self.response = response


def accepted() -> HttpResponse:
    response = HttpResponse(status=202)
    del response["Content-Type"]
    return response


async def admit_post(
    server: McpServer, request: HttpRequest, obj: Any, headers: Mapping[str, str]
) -> tuple[McpRequest, sessions.McpSession | None]:
    """Turn a handshake-era POST into an :class:`McpRequest` to serve (or raise :class:`Handled`/``Rejection``)."""
    if isinstance(obj, dict) and "method" not in obj and ("result" in obj or "error" in obj):
        try:
            session = await session_for(server, request, headers)
        except McpJsonRpcError as exc:
            raise Rejection(exc, None) from None
        await deliver_reply(session, obj)
        raise Handled(accepted())
    try:
        message = parse_message(obj)
    except McpJsonRpcError as exc:
        raise Rejection(exc, readable_id(obj)) from None
    served = get_settings().handshake_versions
    if message.method == "initialize":
        if message.is_notification:
            raise Handled(accepted())
        raise Handled(await _initialize(server, request, message.id, message.params, served))
    try:
        session = await session_for(server, request, headers)
        version = check_version_header(headers, session.protocol_version, served)
    except McpJsonRpcError as exc:
        raise Rejection(exc, message.id) from None
    if message.is_notification:
        if message.method == "notifications/cancelled":
            _cancel_running(session, message.params.get("requestId"))
        telemetry.notified(message.method, message.params, headers, version)
        raise Handled(accepted())
    if message.method in MODERN_ONLY_METHODS:
        error = method_not_found(message.method)
        error.http_status = 200  # in-band inside a live session
        raise Rejection(error, message.id)
    meta_in = message.params.get("_meta")
    progress = meta_in.get("progressToken") if isinstance(meta_in, dict) else None
    context = McpRequest(
        request,
        request_id=message.id,
        method=message.method,
        params=message.params,
        meta=_meta(version, session.capabilities, session, progress),
        headers=headers,
        namespace=server.urls_namespace,
        era="handshake",
    )
    context.set_asker(ClientAsker(session, context).ask)
    return context, session


async def _initialize(
    server: McpServer, request: HttpRequest, request_id: Any, params: dict[str, Any], served: tuple[str, ...]
) -> HttpResponseBase:
    from .views import _error, _json

    capabilities = params.get("capabilities", {})
    if not isinstance(params.get("protocolVersion"), str) or not isinstance(capabilities, dict):
        error = invalid_params("Invalid params for initialize: protocolVersion (string) and capabilities are required")
        return _error(error, request_id)
    version = negotiate(params["protocolVersion"], served)
    owner, counted_as = principal(server, request), limit_key(server, request)
    try:
        session = await sessions.create(owner, version, capabilities, params.get("clientInfo"), counted_as)
    except McpJsonRpcError as exc:
        return _error(exc, request_id)
    probe = McpRequest(
        request,
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

    result = await (telemetry.traced(probe, answer) if telemetry.active() else answer())
    response = _json({"jsonrpc": "2.0", "id": request_id, "result": result})
    response["Mcp-Session-Id"] = session.id
    return response


async def serve_handshake_only(
    server: McpServer, context: McpRequest, session: sessions.McpSession
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
        await sessions.save(session)
        return {}
    uri = params.get("uri")
    if not isinstance(uri, str):
        raise invalid_params(f"Invalid params for {method}: uri must be a string")
    if not len(server.resources) or not has_channel_layer():
        raise method_not_found(method)
    found = server.resources.resolve(uri)
    if found is None or not await visible(context, [found[0]]):  # one it may not see does not exist
        raise invalid_params(f"Resource not found: {uri}", {"uri": uri})
    subscribe = method == "resources/subscribe"
    if subscribe and uri not in session.subscriptions:
        session.subscriptions.append(uri)
    elif not subscribe and uri in session.subscriptions:
        session.subscriptions.remove(uri)
    await sessions.save(session)
    layer = get_channel_layer()
    if layer is not None:
        with contextlib.suppress(Exception):  # the GET stream also reads the list when it opens
            await layer.group_send(
                session.group,
                {"type": CONTROL_TYPE, "op": "join" if subscribe else "leave", "group": resource_group(uri)},
            )
    return {}


def legacy_result(result: dict[str, Any]) -> dict[str, Any]:
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


# -- running requests and cancellation ------------------------------------------------------------

_running: dict[tuple[str, Any], asyncio.Future[Any]] = {}


def track(session: sessions.McpSession, request_id: Any, work: asyncio.Future[Any]) -> None:
    """Let ``notifications/cancelled`` for this request (in this process) cancel its handler."""
    key = (session.id, request_id)
    _running[key] = work
    work.add_done_callback(lambda _: _running.pop(key, None))


def _cancel_running(session: sessions.McpSession, request_id: Any) -> None:
    if not isinstance(request_id, str | int) or isinstance(request_id, bool):
        return  # no request has such an id (a notification gets no answer, so none is sent)
    work = _running.get((session.id, request_id))
    if work is not None and not work.done():
        work.cancel()


# -- asking the client -----------------------------------------------------------------------------


def _reply_group(session: sessions.McpSession) -> str:
    return session.group + ".reply"


async def deliver_reply(session: sessions.McpSession, message: dict[str, Any]) -> None:
    """Route a client's response to the handler waiting for it, in this process or another."""
    key = (session.id, str(message.get("id")))
    waiting = _pending.get(key)
    if waiting is not None:
        if not waiting.done():
            waiting.set_result(message)
        return
    layer = get_channel_layer()
    if layer is not None:
        # As JSON text: a layer's own encoding (msgpack) refuses lone surrogates and integers past 64 bits.
        reply = {"type": REPLY_TYPE, "id": key[1], "message": dumps(message)}
        try:
            await layer.group_send(_reply_group(session), reply)
        except Exception as exc:  # a layer may fail in any way (Redis down)
            answer = "The reply could not be passed on (the channel layer is unavailable): send it again"
            raise unavailable(logger, "layer-reply", "Channel layer (passing a reply on)", exc, answer) from None


class ClientAsker:
    """Asks a handshake-era client with server-to-client requests on the response stream."""

    def __init__(self, session: sessions.McpSession, request: McpRequest) -> None:
        self.session = session
        self.request = request

    async def ask(self, requests: Mapping[str, InputRequest[Any]]) -> dict[str, Any]:
        from .protocol.errors import missing_capability

        undeclared = [r for r in requests.values() if not r.declared_by(self.session.capabilities)]
        if undeclared:
            required: dict[str, Any] = {}
            for r in undeclared:
                for kind, sub in r.required_capability.items():
                    required.setdefault(kind, {}).update(sub)
            raise missing_capability(required)
        loop = asyncio.get_running_loop()
        answers: dict[str, Any] = {}
        layer = get_channel_layer()
        channel = None
        listener = None
        try:
            if layer is not None:
                try:
                    channel = await layer.new_channel()
                    await layer.group_add(_reply_group(self.session), channel)
                    listener = asyncio.ensure_future(self._listen(layer, channel))
                except Exception as exc:  # the layer down: a reply reaching this process is still found here
                    throttle.log(logger, logging.WARNING, "layer-ask", "Asking without the channel layer: %r", exc)
                    channel = None
            for key, input_request in requests.items():
                request_id = f"django-mcp-{secrets.token_hex(8)}"
                waiting: asyncio.Future[dict[str, Any]] = loop.create_future()
                _pending[(self.session.id, request_id)] = waiting
                try:
                    params = dict(input_request.params)
                    if self.session.protocol_version < "2025-11-25":
                        params.pop("mode", None)  # form mode was the only mode before 2025-11-25
                    self.request.send(
                        {"jsonrpc": "2.0", "id": request_id, "method": input_request.method, "params": params}
                    )
                    reply = await asyncio.wait_for(waiting, ASK_TIMEOUT_SECONDS)
                finally:
                    _pending.pop((self.session.id, request_id), None)
                if "error" in reply:
                    error = reply.get("error") or {}
                    raise McpJsonRpcError(
                        INTERNAL_ERROR, f"The client refused {input_request.method}: {error.get('message', error)}"
                    )
                answers[key] = input_request.parse(key, reply.get("result"))
        except TimeoutError:
            raise McpJsonRpcError(INTERNAL_ERROR, "The client did not answer in time") from None
        finally:
            if listener is not None:
                listener.cancel()
            if layer is not None and channel is not None:
                with contextlib.suppress(Exception):
                    await layer.group_discard(_reply_group(self.session), channel)
        return answers

    async def _listen(self, layer: Any, channel: str) -> None:
        while True:
            message = await layer.receive(channel)
            if message.get("type") != REPLY_TYPE:
                continue
            waiting = _pending.get((self.session.id, str(message.get("id"))))
            if waiting is not None and not waiting.done():
                reply = message["message"]  # JSON text; a dict from a process of an older version
                waiting.set_result(json.loads(reply) if isinstance(reply, str) else reply)


# -- GET and DELETE -----------------------------------------------------------------------------------


async def open_stream(server: McpServer, request: HttpRequest, headers: Mapping[str, str]) -> ListenStream:
    """The session's ``GET`` stream: list changes and subscribed resource updates, from any process."""
    session = await session_for(server, request, headers)
    probe = McpRequest(
        request,
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


async def end_session(server: McpServer, request: HttpRequest, headers: Mapping[str, str]) -> HttpResponse:
    session = await session_for(server, request, headers)
    await sessions.delete(session)
    return HttpResponse(status=200)
