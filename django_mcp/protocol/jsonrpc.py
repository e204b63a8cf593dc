"""JSON-RPC 2.0 envelopes as MCP 2026-07-28 uses them: one message per POST."""

from __future__ import annotations

import json
import math
import operator
import re
from dataclasses import dataclass, field
from itertools import accumulate, count
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr, ValidationError

from .errors import INVALID_PARAMS, INVALID_REQUEST, PARSE_ERROR, McpJsonRpcError

RequestId = StrictStr | StrictInt
"""A JSON-RPC request id: a string or an integer, never null (and never a boolean)."""

META_PROTOCOL_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CLIENT_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
META_CLIENT_INFO = "io.modelcontextprotocol/clientInfo"
META_LOG_LEVEL = "io.modelcontextprotocol/logLevel"
META_SERVER_INFO = "io.modelcontextprotocol/serverInfo"
META_SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"

MAX_NESTING_DEPTH = 64
"""How deeply a request body may nest arrays and objects (the top-level object is level 1).

Deeper bodies are refused with -32700 before decoding. The bound is far above what an MCP request
needs, and far below Python's recursion limit: recursive consumers downstream (the JSON encoder that
echoes a value, JSON Schema validation, pydantic) spend one or more frames per level.
"""

LogLevel = Literal["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]
LOG_LEVELS: tuple[str, ...] = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")


class _Envelope(BaseModel):
    model_config = ConfigDict(extra="allow")

    jsonrpc: Literal["2.0"]
    method: StrictStr
    id: RequestId | None = None
    params: dict[str, Any] | None = None


class RequestMeta(BaseModel):
    """The per-request ``params._meta`` fields every 2026-07-28 request carries."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    protocol_version: StrictStr = Field(alias="io.modelcontextprotocol/protocolVersion")
    client_capabilities: dict[str, Any] = Field(alias="io.modelcontextprotocol/clientCapabilities")
    client_info: dict[str, Any] | None = Field(default=None, alias="io.modelcontextprotocol/clientInfo")
    log_level: LogLevel | None = Field(default=None, alias="io.modelcontextprotocol/logLevel")
    progress_token: StrictStr | StrictInt | None = Field(default=None, alias="progressToken")


@dataclass(frozen=True)
class Message:
    """One inbound JSON-RPC request or notification, envelope-checked."""

    method: str
    params: dict[str, Any] = field(default_factory=dict)
    id: str | int | None = None
    is_notification: bool = False


def parse_json(body: bytes) -> Any:
    """Decode a request body, or raise -32700.

    Stricter than :func:`json.loads`: the body must be valid UTF-8 (or UTF-16/32, which
    :func:`json.detect_encoding` recognises), nest at most :data:`MAX_NESTING_DEPTH` deep,
    and carry no ``NaN``/``Infinity``/``-Infinity`` literal or number beyond a float's range,
    so whatever is decoded can be echoed back as JSON. Integers longer than the interpreter's
    ``sys.get_int_max_str_digits()`` (4300 by default) are refused too.
    """
    try:
        text = body.decode(json.detect_encoding(body))
        _check_depth(text)
        return _DECODER.decode(text)
    except RecursionError:  # belt and braces: _check_depth should have refused the body first
        raise McpJsonRpcError(PARSE_ERROR, f"Parse error: nested deeper than {MAX_NESTING_DEPTH} levels") from None
    except (UnicodeDecodeError, ValueError) as exc:
        raise McpJsonRpcError(PARSE_ERROR, f"Parse error: {exc}") from None


# A string literal, or an unterminated one up to the end of the text (so every quote outside strings
# starts a match and the scan stays linear even for malformed bodies).
_STRING_LITERAL = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*(?:"|\\?\Z)', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_BRACKET_WEIGHTS = bytes.maketrans(b"[{]}", b"\x02\x02\x00\x00")


def _check_depth(text: str) -> None:
    """Raise ``ValueError`` if brackets outside string literals nest deeper than MAX_NESTING_DEPTH.

    Runs before decoding because the decoder recurses once per level (RecursionError, not a
    parse error). Only regular expressions and C-level iteration: linear in the body size.
    """
    if text.count("{") + text.count("[") <= MAX_NESTING_DEPTH:  # depth <= openers: the common case stops here
        return
    brackets = _NOT_BRACKET.sub("", _STRING_LITERAL.sub("", text))
    if len(brackets) <= MAX_NESTING_DEPTH:  # the same, not counting brackets inside strings
        return
    # Openers weigh 2 and closers 0, so after i brackets the running sum minus i is the depth.
    weights = brackets.encode("ascii").translate(_BRACKET_WEIGHTS)
    if max(map(operator.sub, accumulate(weights), count(1))) > MAX_NESTING_DEPTH:
        raise ValueError(f"nested deeper than {MAX_NESTING_DEPTH} levels")


def _reject_constant(name: str) -> Any:
    """``NaN``, ``Infinity`` and ``-Infinity`` are JavaScript, not JSON (RFC 8259 §6)."""
    raise ValueError(f"{name} is not a JSON value")


def _finite_float(literal: str) -> float:
    """A JSON number with a fraction or exponent; one that overflows a double (1e999) is refused."""
    value = float(literal)
    if math.isinf(value):
        raise ValueError("number out of range (it overflows a double)")
    return value


_DECODER = json.JSONDecoder(parse_constant=_reject_constant, parse_float=_finite_float)  # json.loads makes one a call


def readable_id(obj: Any) -> str | int | None:
    """The request id to echo in an error, if one can be read from ``obj``."""
    if isinstance(obj, dict):
        rid = obj.get("id")
        if isinstance(rid, str) or (isinstance(rid, int) and not isinstance(rid, bool)):
            return rid
    return None


def parse_message(obj: Any) -> Message:
    """Check the JSON-RPC envelope of one decoded body, or raise -32600."""
    if isinstance(obj, list):
        raise McpJsonRpcError(INVALID_REQUEST, "Batch requests are not supported: send one JSON-RPC message per POST")
    if not isinstance(obj, dict):
        raise McpJsonRpcError(INVALID_REQUEST, "Invalid request: the body must be a JSON-RPC request object")
    if "method" not in obj and ("result" in obj or "error" in obj):
        raise McpJsonRpcError(INVALID_REQUEST, "Invalid request: clients must not post JSON-RPC responses")
    if "id" in obj and obj["id"] is None:
        raise McpJsonRpcError(INVALID_REQUEST, "Invalid request: id must be a string or an integer, not null")
    try:
        env = _Envelope.model_validate(obj)
    except ValidationError as exc:
        raise McpJsonRpcError(INVALID_REQUEST, f"Invalid request: {describe_validation_error(exc)}") from None
    return Message(
        method=env.method,
        params=env.params or {},
        id=env.id,
        is_notification="id" not in obj,
    )


def parse_meta(params: dict[str, Any]) -> RequestMeta:
    """Read the required ``params._meta`` fields, or raise -32602 (HTTP 400)."""
    meta = params.get("_meta")
    if not isinstance(meta, dict):
        raise McpJsonRpcError(
            INVALID_PARAMS,
            f"Invalid params: params._meta is required and must carry {META_PROTOCOL_VERSION!r} "
            f"and {META_CLIENT_CAPABILITIES!r}",
        )
    try:
        return RequestMeta.model_validate(meta)
    except ValidationError as exc:
        raise McpJsonRpcError(INVALID_PARAMS, f"Invalid params._meta: {describe_validation_error(exc)}") from None


def describe_validation_error(exc: ValidationError) -> str:
    """A one-line account of a pydantic error: where, and what was wrong."""
    parts = []
    for err in exc.errors()[:3]:
        where = ".".join(str(p) for p in err["loc"]) or "(root)"
        parts.append(f"{where}: {err['msg']}")
    return "; ".join(parts)


def result_response(request_id: str | int | None, result: dict[str, Any]) -> dict[str, Any]:
    """A JSON-RPC result response."""
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def error_response(request_id: str | int | None, error: McpJsonRpcError) -> dict[str, Any]:
    """A JSON-RPC error response echoing ``request_id``.

    When the id could not be read it is omitted: the 2026-07-28 schema types
    ``JSONRPCErrorResponse.id`` as optional but never null.
    """
    if request_id is None:
        return {"jsonrpc": "2.0", "error": error.to_error()}
    return {"jsonrpc": "2.0", "id": request_id, "error": error.to_error()}


def notification(method: str, params: dict[str, Any]) -> dict[str, Any]:
    """A JSON-RPC notification."""
    return {"jsonrpc": "2.0", "method": method, "params": params}


def compact(members: dict[str, Any]) -> dict[str, Any]:
    """A wire object without its absent optional members (None, or an empty tuple/list), in order."""
    return {k: v for k, v in members.items() if v is not None and v != () and v != []}


class WireJSONEncoder(json.JSONEncoder):
    """The wire format: ``encode()`` always returns one line of valid JSON that encodes to UTF-8.

    What :func:`dumps` uses, and what ``JsonResponse(payload, encoder=...)`` should use (subclass it
    with ``DjangoJSONEncoder`` to keep Django's ``default()``). The format is fixed, whatever
    ``json.dumps`` passes: compact separators, no indent, non-ASCII characters as they are, except

    * lone UTF-16 surrogates (a client may send ``"\\ud800"`` and have it echoed back), written as
      ``\\uXXXX`` escapes: the echo is exact and the text still encodes to UTF-8;
    * ``NaN``/``Infinity``/``-Infinity`` are never written: non-finite floats (and integers longer than
      ``sys.get_int_max_str_digits()``) become ``null``, as JavaScript's ``JSON.stringify`` does,
      rather than fail after a response has started.

    Values that are not JSON at all (a ``set``, an arbitrary object) still raise ``TypeError`` from
    ``default()``, a circular structure ``ValueError``. Only ``encode()`` is wire-safe, not ``iterencode()``.
    """

    def __init__(self, **kwargs: Any) -> None:
        kwargs.update(separators=(",", ":"), indent=None, ensure_ascii=False, allow_nan=False)
        super().__init__(**kwargs)

    def encode(self, o: Any) -> str:
        try:
            text = super().encode(o)
        except ValueError:
            # Only on the unusual path: rebuild the value without what JSON cannot carry, and retry.
            text = super().encode(_representable(o, set()))
        return _escape_surrogates(text)


_WIRE_ENCODER = WireJSONEncoder()
_SURROGATE = re.compile(r"[\ud800-\udfff]")
_NONFINITE_KEYS = {math.inf: "Infinity", -math.inf: "-Infinity"}


def _escape_surrogates(text: str) -> str:
    """JSON text with every lone surrogate written as a ``\\uXXXX`` escape.

    JSON output holds non-ASCII characters only inside string literals, where the escape means the
    same code point; unlike the raw character, it survives encoding to UTF-8.
    """
    if text.isascii():  # O(1) in CPython: the usual case costs nothing
        return text
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def _representable(value: Any, path: set[int]) -> Any:
    """``value`` with non-finite floats and over-long integers replaced by ``None`` (dict keys: strings)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, int) and not isinstance(value, bool):
        return value if _int_fits(value) else None
    if not isinstance(value, dict | list | tuple):
        return value
    if id(value) in path:
        raise ValueError("Circular reference detected")
    path.add(id(value))
    try:
        if isinstance(value, dict):
            return {_representable_key(k): _representable(v, path) for k, v in value.items()}
        return [_representable(v, path) for v in value]
    finally:
        path.discard(id(value))


def _representable_key(key: Any) -> Any:
    """An object key JSON can carry: the name of a non-finite float, or an over-long int in hex."""
    if isinstance(key, float) and not math.isfinite(key):
        return _NONFINITE_KEYS.get(key, "NaN")
    if isinstance(key, int) and not isinstance(key, bool) and not _int_fits(key):
        return hex(key)  # the digit limit binds decimal conversion only
    return key


def _int_fits(value: int) -> bool:
    try:
        int.__repr__(value)
    except ValueError:  # longer than sys.get_int_max_str_digits()
        return False
    return True


def dumps(obj: Any) -> str:
    """Compact JSON, one line: what the wire and every SSE ``data:`` line carry.

    Never fails on a JSON-shaped value, whatever its strings hold; see :class:`WireJSONEncoder`.
    """
    return _WIRE_ENCODER.encode(obj)


def encode_json(obj: Any) -> bytes:
    """:func:`dumps` as UTF-8 bytes, for a response body (the encoding cannot fail)."""
    return dumps(obj).encode()
