"""stdio: newline-delimited JSON-RPC on stdin and stdout, served by the same fronts as HTTP.

Each line is handed to the endpoint's ladder and its era's front as the POST a conforming HTTP
client would send with it (the routing headers are derived from the message itself, the session id
of the handshake era is kept here), so both eras, sessions, tasks, listen streams and every check
are the HTTP ones. What stdio changes: the caller is the user the command names (no auth runs),
``notifications/cancelled`` cancels the request it names, and what a POST would answer with (a JSON
body, or each event of an SSE body) is written to stdout, a line per message.
"""

from __future__ import annotations

import asyncio
import io
import json
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

from asgiref.sync import ThreadSensitiveContext, sync_to_async
from django.core.handlers.asgi import ASGIRequest
from django.db import close_old_connections
from django.http import HttpResponseBase

from ..conf import get_settings
from ..protocol import sse
from ..protocol.errors import INVALID_REQUEST, PARSE_ERROR, McpJsonRpcError
from ..protocol.handshake import SESSION_HEADER
from ..protocol.headers import encode_value, param_header_values
from ..protocol.jsonrpc import META_PROTOCOL_VERSION, parse_json
from .views import aserve_message

if TYPE_CHECKING:
    from .mounted import MountedServer


Write = Callable[[bytes], None]


class StdioSession:
    """One stdio client of ``server``, calling as ``user``; messages out go to ``write`` (a line each)."""

    def __init__(self, server: MountedServer, user: Any, write: Write, path: str = "/mcp") -> None:
        self.server, self.user, self.write, self.path = server, user, write, path
        self.session_id: str | None = None
        self.negotiated: str | None = None
        self.in_flight: dict[str, asyncio.Task[None]] = {}
        self.listening: set[str] = set()  # the keys of in-flight subscriptions/listen requests

    async def aserve(self, lines: AsyncIterator[bytes | None]) -> None:
        """Serve every line until the input ends; then cancel what is still answering and wind down.

        A ``None`` line stands for one that was too long to read (it is answered with an error).
        """
        try:
            async for line in lines:
                if line is None:
                    limit = get_settings().MAX_REQUEST_BYTES
                    self._send_error(None, INVALID_REQUEST, f"Request too large: at most {limit} bytes a line")
                elif line.strip():
                    await self._areceive(line)
        finally:
            await self._aend()

    async def _aend(self) -> None:
        """The input ended (the client's way to stop a stdio server): its listen streams end, its other
        requests in flight get the grace period to answer. (The command then shuts the process down.)"""
        for key in self.listening & set(self.in_flight):
            self.in_flight[key].cancel()
        if self.in_flight:
            tasks = list(self.in_flight.values())
            _, late = await asyncio.wait(tasks, timeout=get_settings().SHUTDOWN_GRACE_SECONDS)
            for task in late:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    async def _areceive(self, line: bytes) -> None:
        try:
            message = parse_json(line)  # what a POST's body meets: depth, encoding, number range
        except McpJsonRpcError as exc:
            self._send_error(None, PARSE_ERROR, f"{exc.message} (a line is one JSON-RPC message)")
            return
        if not isinstance(message, dict):
            self._send_error(None, INVALID_REQUEST, "Invalid Request: one JSON-RPC message object per line")
            return
        method = message.get("method")
        if method == "notifications/cancelled":
            params = message.get("params")
            task = self.in_flight.get(_key(params.get("requestId"))) if isinstance(params, dict) else None
            if task is not None:
                task.cancel()
            return
        if isinstance(method, str) and "id" in message and method != "initialize":
            key = _key(message["id"])
            if key in self.in_flight:
                self._send_error(message["id"], INVALID_REQUEST, "Invalid Request: that id is still in flight")
                return
            task = asyncio.create_task(self._aanswer(message, line))
            self.in_flight[key] = task
            if method == "subscriptions/listen":
                self.listening.add(key)
            task.add_done_callback(lambda _: self._forget(key))
            return
        # In order: initialize (what follows needs its session), notifications, the client's replies.
        await self._aanswer(message, line)

    def _forget(self, key: str) -> None:
        self.in_flight.pop(key, None)
        self.listening.discard(key)

    async def _aanswer(self, message: dict[str, Any], line: bytes) -> None:
        async with ThreadSensitiveContext():  # as Django's ASGI handler: this message's sync code in its own thread
            try:
                response = await aserve_message(self.server, self._request(message, line), self._headers(message))
                await self._aforward(message, response)
            finally:
                await sync_to_async(close_old_connections)()

    async def _aforward(self, message: dict[str, Any], response: HttpResponseBase) -> None:
        if message.get("method") == "initialize" and SESSION_HEADER in response:
            self.session_id = response[SESSION_HEADER]
        if response.streaming:
            stream = response.streaming_content  # type: ignore[attr-defined]
            try:
                async for event in sse.amessages(stream):
                    self._send_line(event)
            finally:
                closing = getattr(stream, "aclose", None)
                if closing is not None:
                    await closing()
            return
        content = getattr(response, "content", b"")
        if content:
            answer = json.loads(content)
            if message.get("method") == "initialize" and isinstance(answer.get("result"), dict):
                self.negotiated = answer["result"].get("protocolVersion")
            self.write(json.dumps(answer, separators=(",", ":")).encode())

    def _headers(self, message: dict[str, Any]) -> dict[str, str]:
        """The headers an HTTP client would send with ``message``: what the ladder compares it with."""
        headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
        if self.session_id is not None:
            headers[SESSION_HEADER] = self.session_id
            if self.negotiated:
                headers["mcp-protocol-version"] = self.negotiated
        params = message.get("params")
        params = params if isinstance(params, dict) else {}
        meta = params.get("_meta")
        version = meta.get(META_PROTOCOL_VERSION) if isinstance(meta, dict) else None
        method = message.get("method")
        if not isinstance(version, str) or not isinstance(method, str):
            return headers
        headers["mcp-protocol-version"] = version
        if "id" not in message:
            return headers
        headers["mcp-method"] = method
        name_param = self.server.dispatcher.name_params.get(method)
        if name_param and isinstance(params.get(name_param), str):
            headers["mcp-name"] = encode_value(params[name_param])
        tool = self.server.tools.get(params.get("name", "")) if method == "tools/call" else None
        arguments = params.get("arguments")
        if tool is not None and isinstance(arguments, dict):
            headers.update(param_header_values(tool.param_headers, arguments))
        return headers

    def _request(self, message: dict[str, Any], line: bytes) -> ASGIRequest:
        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": "POST",
            "scheme": "http",
            "path": self.path,
            "query_string": b"",
            "headers": [],  # the front reads the headers it is given, not these
            "client": ("127.0.0.1", 0),
            "server": ("localhost", 0),
        }
        request = ASGIRequest(scope, io.BytesIO(line))
        request.user = self.user
        return request

    def _send_line(self, message: Any) -> None:
        self.write(json.dumps(message, separators=(",", ":")).encode())

    def _send_error(self, request_id: Any, code: int, text: str) -> None:
        self._send_line({"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": text}})


def _key(request_id: Any) -> str:
    return json.dumps(request_id)


async def aread_lines(reader: asyncio.StreamReader) -> AsyncIterator[bytes | None]:
    """The lines of ``reader`` until it ends; None for a line past the reader's limit (skipped)."""
    while True:
        try:
            line = await reader.readuntil(b"\n")
        except asyncio.IncompleteReadError as end:
            if end.partial:
                yield end.partial
            return
        except asyncio.LimitOverrunError as over:
            await _skip_line(reader, over.consumed)
            yield None
            continue
        yield line


async def _skip_line(reader: asyncio.StreamReader, consumed: int) -> None:
    await reader.readexactly(consumed)
    while True:
        try:
            await reader.readuntil(b"\n")
            return
        except asyncio.LimitOverrunError as over:
            await reader.readexactly(over.consumed)
        except asyncio.IncompleteReadError:
            return
