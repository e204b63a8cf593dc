"""What a handler gets as its first argument: the MCP request being served."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Mapping
from functools import cached_property
from typing import TYPE_CHECKING, Any

from asgiref.sync import async_to_sync
from django.core.handlers.wsgi import WSGIRequest

from ..conf import get_settings
from ..protocol.errors import INTERNAL_ERROR, McpJsonRpcError
from ..protocol.jsonrpc import LOG_LEVELS, RequestMeta, notification
from .caller import Caller, caller_of
from .mrtr import MRTR_METHODS, InputRequest, InputRounds, binding

if TYPE_CHECKING:
    from django.http import HttpRequest

Sink = Callable[[dict[str, Any]], None]
Asker = Callable[[Mapping[str, InputRequest[Any]]], Awaitable[dict[str, Any]]]
"""How an era asks the client for input: gets the requests by key, returns the answers by key."""


class McpRequest:
    """One MCP request: its params, the client's declared capabilities, the principal.

    Handlers report progress and log messages through it; both are dropped
    unless the client asked for them (``progressToken``, ``logLevel``) and
    both travel on the SSE response of the same POST.
    """

    def __init__(
        self,
        http_request: HttpRequest,
        *,
        request_id: str | int | None,
        method: str,
        params: dict[str, Any],
        meta: RequestMeta,
        headers: Mapping[str, str] | None = None,
        sink: Sink | None = None,
        namespace: str = "",
        asker: Asker | None = None,
        era: str = "modern",
    ) -> None:
        self.http_request = http_request
        self.era = era
        """``"modern"`` (2026-07-28) or ``"handshake"`` (2025-11-25 and earlier, in a session)."""
        self.namespace = namespace
        """The URL namespace of the server serving this request (bindings are scoped to it)."""
        self._asker = asker
        self.headers: Mapping[str, str] = headers if headers is not None else {}
        """The HTTP request headers, with lower-case names."""
        self.id = request_id
        self.method = method
        self.params = params
        self.meta = meta
        self._sink = sink
        self._loop = asyncio.get_running_loop() if sink is not None else None
        self._loop_thread = threading.get_ident()
        self._last_progress: float | None = None
        self._rounds: InputRounds | None = None

    @property
    def served_by_asgi(self) -> bool:
        """Whether an ASGI server serves this request, so work may outlive its response.

        Under a WSGI server (gunicorn, runserver without daphne) each request gets an event loop
        that ends with its response: no stream stays open and no task body runs on after it.
        """
        return not isinstance(self.http_request, WSGIRequest)

    @property
    def auth(self) -> Any:
        """The authenticated principal (what the endpoint's ninja ``auth`` returned), or None."""
        return getattr(self.http_request, "auth", None)

    @property
    def user(self) -> Any:
        """The Django user of the HTTP request (``AnonymousUser`` when there is none)."""
        return getattr(self.http_request, "user", None)

    @cached_property
    def caller(self) -> Caller:
        """Who is asking (:func:`~.caller.caller_of` the HTTP request)."""
        return caller_of(self.http_request)

    @property
    def principal_key(self) -> str:
        """A stable string naming who is asking: the auth principal, else the Django user, else anonymous."""
        return self.caller.key

    @property
    def protocol_version(self) -> str:
        return self.meta.protocol_version

    @property
    def client_capabilities(self) -> dict[str, Any]:
        """The capabilities this request declared (never inferred from earlier requests)."""
        return self.meta.client_capabilities

    def declares_extension(self, identifier: str) -> bool:
        """Whether this request declared the extension ``identifier`` in its own ``_meta``."""
        extensions = self.client_capabilities.get("extensions")
        return isinstance(extensions, dict) and isinstance(extensions.get(identifier), dict)

    @property
    def input_rounds(self) -> InputRounds:
        """The input gathered across MRTR rounds; reading it verifies ``requestState`` (-32602 if bad)."""
        if self.method not in MRTR_METHODS:
            raise RuntimeError(f"Client input can only be asked for in {', '.join(sorted(MRTR_METHODS))}")
        if self._rounds is None:
            bound_to = binding(f"{self.namespace}\0{self.principal_key}", self.method, self.params)
            self._rounds = InputRounds(self.params, bound_to, get_settings().MRTR_STATE_MAX_AGE_SECONDS)
        return self._rounds

    async def aask(self, requests: Mapping[str, InputRequest[Any]]) -> dict[str, Any]:
        """The client's answers to ``requests`` (key → :func:`~django_mcp.elicit` etc.).

        In 2026-07-28, if any is unanswered the request ends here with
        ``input_required`` and the handler runs again, from the top, when the
        client retries with the answers; in the handshake era the client is
        asked on the response stream and this waits for its answer. Answers
        are unvalidated client input (see ``validate=`` on
        :func:`~django_mcp.elicit`). A request kind the client did not declare
        answers -32021; check with :meth:`can_ask` to offer another.
        """
        if self._asker is not None:
            return await self._asker(requests)
        return self.input_rounds.ask(requests, self.client_capabilities)

    @property
    def limit_key(self) -> str:
        """Whom per-caller limits count (listen streams, sessions): :attr:`Caller.limit_key`."""
        return self.caller.limit_key

    def ask(self, requests: Mapping[str, InputRequest[Any]]) -> dict[str, Any]:
        """:meth:`aask` for sync handlers (call it from the handler's worker thread)."""
        if self._asker is not None:
            return async_to_sync(self._asker)(requests)
        return self.input_rounds.ask(requests, self.client_capabilities)

    def can_ask(self, request: InputRequest[Any]) -> bool:
        """Whether this request's client declared the capability ``request`` needs."""
        return request.declared_by(self.client_capabilities)

    def progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        """Send ``notifications/progress`` if the client gave a ``progressToken``.

        ``progress`` must increase from one call to the next. Callable from
        sync handlers (in their worker thread) and async ones alike.
        """
        token = self.meta.progress_token
        if token is None:
            return
        if self._last_progress is not None and progress <= self._last_progress:
            raise ValueError(f"progress must increase: {progress} after {self._last_progress}")
        self._last_progress = progress
        params: dict[str, Any] = {"progressToken": token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        self._emit(notification("notifications/progress", params))

    def log(self, level: str, data: Any, logger: str | None = None) -> None:
        """Send ``notifications/message`` if the request's ``logLevel`` is at or below ``level``."""
        if level not in LOG_LEVELS:
            raise ValueError(f"unknown log level {level!r}; use one of {', '.join(LOG_LEVELS)}")
        wanted = self.meta.log_level
        if wanted is None or LOG_LEVELS.index(level) < LOG_LEVELS.index(wanted):
            return
        params: dict[str, Any] = {"level": level, "data": data}
        if logger is not None:
            params["logger"] = logger
        self._emit(notification("notifications/message", params))

    def set_asker(self, asker: Asker) -> None:
        """How this request asks the client for input (the era's front decides)."""
        self._asker = asker

    def set_sink(self, sink: Sink) -> None:
        """Where this request's messages go (the response stream the front opened)."""
        self._sink = sink
        self._loop = asyncio.get_running_loop()

    def send(self, message: dict[str, Any]) -> None:
        """Send a message on this request's response stream (a notification, or a request to the client)."""
        self._emit(message)

    def finish(self) -> None:
        """The response is complete: later progress and log calls are dropped."""
        self._sink = None

    def _emit(self, message: dict[str, Any]) -> None:
        if self._sink is None or self._loop is None:
            return
        if threading.get_ident() == self._loop_thread:
            self._sink(message)
        else:
            self._loop.call_soon_threadsafe(self._sink, message)

    def __repr__(self) -> str:
        return f"<McpRequest {self.method} id={self.id!r}>"


def needs_asgi(what: str) -> McpJsonRpcError:
    """The answer to a request for ``what`` under a WSGI server, which cannot serve it (HTTP 501)."""
    return McpJsonRpcError(
        INTERNAL_ERROR,
        f"{what} needs an ASGI server (daphne, uvicorn): this project is served over WSGI here, "
        "where each request's event loop ends with its response",
        http_status=501,
    )
