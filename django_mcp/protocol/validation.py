"""The validation ladder: each rung is a small pure check that raises a typed rejection.

The order is wire-reference §1.4: Origin → media types → JSON → envelope →
(notification?) → handshake-era initialize → ``_meta`` → routing headers → version.
Method lookup, client-capability gates and parameter validation follow in
dispatch, where the server's registries are known.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any

from .errors import (
    INVALID_REQUEST,
    UNSUPPORTED_PROTOCOL_VERSION,
    McpJsonRpcError,
    header_mismatch,
)
from .handshake import is_handshake_era
from .headers import decode_value
from .jsonrpc import Message, RequestMeta, parse_json, parse_message, parse_meta, readable_id

PROTOCOL_VERSION = "2026-07-28"
SUPPORTED_VERSIONS: tuple[str, ...] = (PROTOCOL_VERSION,)

_JSON = "application/json"
_SSE = "text/event-stream"


class Rejection(Exception):
    """A request refused before dispatch: an HTTP status and, usually, a JSON-RPC error."""

    def __init__(self, error: McpJsonRpcError, request_id: str | int | None = None) -> None:
        super().__init__(error.message)
        self.error = error
        self.request_id = request_id

    @property
    def http_status(self) -> int:
        return self.error.http_status


@dataclass(frozen=True)
class Admitted:
    """A request that passed every rung up to dispatch."""

    message: Message
    meta: RequestMeta | None  # None for notifications, whose headers this revision leaves undefined


def check_origin(origin: str | None, allowed: Callable[[str], bool]) -> None:
    """403 for an ``Origin`` header that is present and not allowed (DNS-rebinding defence)."""
    if origin is not None and not allowed(origin):
        raise Rejection(McpJsonRpcError(INVALID_REQUEST, f"Origin not allowed: {origin}", http_status=403))


def _media_types(header: str) -> set[str]:
    return {part.split(";", 1)[0].strip().lower() for part in header.split(",") if part.strip()}


def check_media_types(content_type: str | None, accept: str | None) -> None:
    """415 unless the body is JSON; 406 unless the client accepts both JSON and SSE.

    A missing ``Accept`` means "anything" (RFC 9110); wildcards count.
    """
    if content_type is None or _media_types(content_type) != {_JSON}:
        raise Rejection(
            McpJsonRpcError(
                INVALID_REQUEST,
                f"Unsupported Content-Type {content_type!r}: send {_JSON}",
                http_status=415,
            )
        )
    if accept is None:
        return
    types = _media_types(accept)
    wild = "*/*" in types
    if not ((wild or _JSON in types or "application/*" in types) and (wild or _SSE in types or "text/*" in types)):
        raise Rejection(
            McpJsonRpcError(
                INVALID_REQUEST,
                f"Not acceptable: Accept must list both {_JSON} and {_SSE} (got {accept!r})",
                http_status=406,
            )
        )


def check_handshake_initialize(message: Message) -> None:
    """A handshake-era ``initialize`` (no ``_meta``) is told which versions we speak."""
    if message.method == "initialize" and "_meta" not in message.params:
        requested = message.params.get("protocolVersion")
        raise Rejection(unsupported_version(requested if isinstance(requested, str) else None), message.id)


def unsupported_version(requested: str | None, supported: Collection[str] = SUPPORTED_VERSIONS) -> McpJsonRpcError:
    """-32022 naming what we support and what was asked for."""
    return McpJsonRpcError(
        UNSUPPORTED_PROTOCOL_VERSION,
        f"Unsupported protocol version: {requested}",
        {"supported": list(supported), "requested": requested},
    )


def check_routing_headers(
    message: Message, meta: RequestMeta, headers: Mapping[str, str], name_param: str | None
) -> None:
    """``MCP-Protocol-Version``, ``Mcp-Method`` and ``Mcp-Name`` must mirror the body (-32020).

    ``headers`` has lower-case names. ``name_param`` is the params key that
    ``Mcp-Name`` mirrors for this method, if any.
    """
    _require_equal(headers, "MCP-Protocol-Version", meta.protocol_version)
    _require_equal(headers, "Mcp-Method", message.method)
    if name_param is not None:
        body_value = message.params.get(name_param)
        lenient = message.method.startswith("tasks/") and "mcp-name" not in headers
        if isinstance(body_value, str) and not lenient:
            # Lenient for tasks/*: fastmcp-tasks' client (the only Python tasks client) omits it there.
            _require_equal(headers, "Mcp-Name", body_value, decode=True)


def _require_equal(headers: Mapping[str, str], name: str, expected: str, *, decode: bool = False) -> None:
    raw = headers.get(name.lower())
    if raw is None:
        raise header_mismatch(f"Missing required header {name}", name)
    value = decode_value(raw, name) if decode else raw.strip(" \t")
    if value != expected:
        raise header_mismatch(f"Header {name} ({value!r}) does not match the request body ({expected!r})", name)


def check_version(
    meta: RequestMeta, supported: Collection[str] = SUPPORTED_VERSIONS, advertised: Collection[str] | None = None
) -> None:
    """-32022 for a protocol version this server does not speak, naming ``advertised`` (default: ``supported``)."""
    if meta.protocol_version not in supported:
        raise unsupported_version(meta.protocol_version, supported if advertised is None else advertised)


@dataclass(frozen=True, slots=True)
class HandshakeBody:
    """A decoded POST body of the handshake era: the first rungs passed, the rest is the handshake front's."""

    body: Any


def admit(
    body: bytes,
    headers: Mapping[str, str],
    *,
    origin_allowed: Callable[[str], bool],
    name_params: Mapping[str, str],
    supported: Collection[str] = SUPPORTED_VERSIONS,
    advertised: Collection[str] | None = None,
    handshake_versions: Collection[str] = (),
) -> Admitted | HandshakeBody:
    """Run the ladder over one POST. Raises :class:`Rejection` at the first failing rung.

    Origin, media types and JSON are the same in both eras (the body is decoded once); when
    ``handshake_versions`` are served and the body belongs to that era, the decoded body is
    returned for the handshake front, which keeps sessions and negotiates.
    """
    check_origin(headers.get("origin"), origin_allowed)
    check_media_types(headers.get("content-type"), headers.get("accept"))
    try:
        obj = parse_json(body)
    except McpJsonRpcError as exc:
        raise Rejection(exc) from None
    if handshake_versions and is_handshake_era(obj, headers):
        return HandshakeBody(obj)
    return admit_message(obj, headers, name_params=name_params, supported=supported, advertised=advertised)


def admit_message(
    obj: Any,
    headers: Mapping[str, str],
    *,
    name_params: Mapping[str, str],
    supported: Collection[str] = SUPPORTED_VERSIONS,
    advertised: Collection[str] | None = None,
) -> Admitted:
    """The rungs after JSON decoding, for a front that already decoded the body (one parse per request).

    ``advertised`` is what a -32022 names when it is not ``supported`` (a server that speaks only the
    handshake era names those revisions, so a client knows to fall back to ``initialize``).
    """
    try:
        message = parse_message(obj)
    except McpJsonRpcError as exc:
        raise Rejection(exc, readable_id(obj)) from None
    if message.is_notification:
        return Admitted(message, None)
    check_handshake_initialize(message)
    try:
        meta = parse_meta(message.params)
        check_routing_headers(message, meta, headers, name_params.get(message.method))
        check_version(meta, supported, advertised)
    except McpJsonRpcError as exc:
        raise Rejection(exc, message.id) from None
    return Admitted(message, meta)
