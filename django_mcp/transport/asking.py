"""Asking a handshake-era client mid-request, and cancelling a request it gave up on.

The server's request goes out on the response stream; the client POSTs its answer back, to any
process: the Channels layer routes it to the one waiting.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import secrets
from collections.abc import Mapping
from typing import Any

from channels.layers import get_channel_layer

from ..protocol.errors import INTERNAL_ERROR, INVALID_REQUEST, McpJsonRpcError
from ..protocol.jsonrpc import dumps
from ..server.mrtr import InputRequest, refuse_undeclared
from ..server.outages import throttle, unavailable
from ..server.request import McpRequest
from . import sessions

logger = logging.getLogger("django_mcp")

REPLY_TYPE = "mcp.session.reply"
ASK_TIMEOUT_SECONDS = 600.0
ASKED_ID_PREFIX = "django-mcp-"
"""How the ids of the server's own requests to a client begin (a secret token follows)."""

_pending: dict[tuple[str, str], asyncio.Future[dict[str, Any]]] = {}  # process-wide by nature: this process's waits


_running: dict[tuple[str, Any], asyncio.Future[Any]] = {}


def track(session: sessions.McpSession, request_id: Any, work: asyncio.Future[Any]) -> None:
    """Let ``notifications/cancelled`` for this request (in this process) cancel its handler."""
    key = (session.id, request_id)
    _running[key] = work
    work.add_done_callback(lambda _: _running.pop(key, None))


def cancel_running(session: sessions.McpSession, request_id: Any) -> None:
    if not isinstance(request_id, str | int) or isinstance(request_id, bool):
        return  # no request has such an id (a notification gets no answer, so none is sent)
    work = _running.get((session.id, request_id))
    if work is not None and not work.done():
        work.cancel()


def _reply_group(session: sessions.McpSession) -> str:
    return session.group + ".reply"


async def adeliver_reply(session: sessions.McpSession, message: dict[str, Any]) -> None:
    """Route a client's response to the handler waiting for it, in this process or another.

    A reply whose id is not of the kind this server gives its requests (``django-mcp-`` and printable
    text) answers nothing here: refused 400 before it is passed on (a lone surrogate, not printable, could
    not cross a Redis layer).
    """
    request_id = message.get("id")
    if not (isinstance(request_id, str) and request_id.startswith(ASKED_ID_PREFIX) and request_id.isprintable()):
        raise McpJsonRpcError(
            INVALID_REQUEST, "Invalid Request: a response's id must be the id of a request this server sent"
        )
    key = (session.id, request_id)
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
        refuse_undeclared(requests.values(), self.session.capabilities)
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
                    listener = asyncio.ensure_future(self._alisten(layer, channel))
                except Exception as exc:  # the layer down: a reply reaching this process is still found here
                    throttle.log(logger, logging.WARNING, "layer-ask", "Asking without the channel layer: %r", exc)
                    channel = None
            for key, input_request in requests.items():
                request_id = f"{ASKED_ID_PREFIX}{secrets.token_hex(8)}"
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

    async def _alisten(self, layer: Any, channel: str) -> None:
        while True:
            message = await layer.receive(channel)
            if message.get("type") != REPLY_TYPE:
                continue
            waiting = _pending.get((self.session.id, str(message.get("id"))))
            if waiting is not None and not waiting.done():
                reply = message["message"]  # JSON text; a dict from a process of an older version
                waiting.set_result(json.loads(reply) if isinstance(reply, str) else reply)
