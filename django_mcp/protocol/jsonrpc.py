"""JSON-RPC 2.0 envelopes as MCP 2026-07-28 uses them: one message per POST."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
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
    """Decode a request body, or raise -32700."""
    try:
        return json.loads(body)
    except (UnicodeDecodeError, ValueError) as exc:
        raise McpJsonRpcError(PARSE_ERROR, f"Parse error: {exc}") from None


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


def dumps(obj: Any) -> str:
    """Compact JSON, one line: what the wire and every SSE ``data:`` line carry."""
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)
