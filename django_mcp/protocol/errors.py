"""JSON-RPC error codes and the exception that carries one to the wire."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
HEADER_MISMATCH = -32020
MISSING_CLIENT_CAPABILITY = -32021
UNSUPPORTED_PROTOCOL_VERSION = -32022

# The HTTP status each protocol-level code travels with. The 2026-07-28 spec
# mandates 400 for -32020/-32021/-32022 and the missing-_meta -32602, and 404
# for -32601; we answer every -32602 with 400 (as the official Python SDK does)
# so a client sees one status per code. Anything else (-32603, application
# codes) is an in-band error on a 200.
_HTTP_STATUS_BY_CODE = {
    PARSE_ERROR: 400,
    INVALID_REQUEST: 400,
    METHOD_NOT_FOUND: 404,
    INVALID_PARAMS: 400,
    HEADER_MISMATCH: 400,
    MISSING_CLIENT_CAPABILITY: 400,
    UNSUPPORTED_PROTOCOL_VERSION: 400,
}


RETRY_AFTER_SECONDS = 2
"""What a 503 answers in ``Retry-After`` unless its raiser says otherwise."""


class McpJsonRpcError(Exception):
    """A JSON-RPC error to send to the client instead of a result.

    Raise it from a tool handler (or any server code) to answer the request
    with ``{"error": {"code": code, "message": message, "data": data}}``.
    ``http_status`` overrides the status the code normally travels with
    (e.g. 403 for a refused ``Origin``); ``headers`` are HTTP headers the
    error's response carries (e.g. an OAuth ``WWW-Authenticate`` challenge).
    """

    def __init__(
        self,
        code: int,
        message: str,
        data: Any = None,
        *,
        http_status: int | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data
        self.http_status = http_status if http_status is not None else _HTTP_STATUS_BY_CODE.get(code, 200)
        self.headers = dict(headers) if headers else None
        if self.http_status == 503 and not any(name.lower() == "retry-after" for name in self.headers or ()):
            # A service this request needs is down (a database, a cache, a worker shutting down): say when
            # to try again (RFC 9110 §10.2.3), as clients and proxies back off by it.
            self.headers = {**(self.headers or {}), "Retry-After": str(RETRY_AFTER_SECONDS)}

    def to_error(self) -> dict[str, Any]:
        """The JSON-RPC ``error`` member."""
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error

    def __repr__(self) -> str:
        return f"McpJsonRpcError({self.code}, {self.message!r}, data={self.data!r})"


def missing_capability(required: dict[str, Any], message: str | None = None) -> McpJsonRpcError:
    """-32021: processing needs a client capability this request did not declare."""
    return McpJsonRpcError(
        MISSING_CLIENT_CAPABILITY,
        message or "Missing required client capability",
        {"requiredCapabilities": required},
    )


def internal_error(message: str, data: Any = None) -> McpJsonRpcError:
    """-32603: the server could not do what was asked (a fault of its own or of a service it needs)."""
    return McpJsonRpcError(INTERNAL_ERROR, message, data)


def method_not_found(method: str) -> McpJsonRpcError:
    """-32601 for a method this server does not serve (to this request)."""
    return McpJsonRpcError(METHOD_NOT_FOUND, f"Method not found: {method}", {"method": method})


def invalid_params(message: str, data: Any = None) -> McpJsonRpcError:
    """-32602 for parameters that do not fit the method."""
    return McpJsonRpcError(INVALID_PARAMS, message, data)


def header_mismatch(message: str, header: str) -> McpJsonRpcError:
    """-32020 for a routing header that is missing, malformed or disagrees with the body."""
    return McpJsonRpcError(HEADER_MISMATCH, message, {"header": header})
