"""The HTTP responses both eras answer with: JSON, a JSON-RPC error, SSE, 202 Accepted."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Mapping
from typing import Any

from django.core.serializers.json import DjangoJSONEncoder
from django.http import HttpResponse, StreamingHttpResponse

from ..compat import mark_logged
from ..protocol import sse
from ..protocol.errors import INTERNAL_ERROR, McpJsonRpcError
from ..protocol.jsonrpc import WireJSONEncoder, error_response
from ..server.outages import throttle

logger = logging.getLogger("django_mcp")


class _JsonEncoder(WireJSONEncoder, DjangoJSONEncoder):
    """The wire format (never fails on a lone surrogate or a non-finite float), plus Django's types."""


_RESPONSE_ENCODER = _JsonEncoder()


def json_response(payload: dict[str, Any], status: int = 200, headers: Mapping[str, str] | None = None) -> HttpResponse:
    """``payload`` as ``application/json``."""
    response = HttpResponse(
        _RESPONSE_ENCODER.encode(payload).encode(), status=status, content_type="application/json", headers=headers
    )
    if status == 503:
        # An outage's answer: what failed is logged once a minute (throttled) where it failed, so Django's
        # request logger must not add a line per request (the flag its log_response() sets and reads).
        mark_logged(response)
    return response


def error_json(
    exc: McpJsonRpcError, request_id: str | int | None, headers: Mapping[str, str] | None = None
) -> HttpResponse:
    """The JSON-RPC error response for ``exc``, with its HTTP status and headers."""
    return json_response(error_response(request_id, exc), exc.http_status, headers or exc.headers)


def sse_response(events: AsyncIterator[bytes]) -> StreamingHttpResponse:
    """A ``text/event-stream`` response of ``events``."""
    return StreamingHttpResponse(events, content_type="text/event-stream", headers=sse.SSE_HEADERS)


def accepted() -> HttpResponse:
    """202 with no body: the answer to a notification or a client's reply."""
    response = HttpResponse(status=202)
    del response["Content-Type"]
    return response


def database_unavailable(exc: Exception, method: str | None = None) -> McpJsonRpcError:
    """The 503 for a lost database; the driver's text (SQL, hosts) is logged, once a minute, never sent."""
    throttle.log(logger, logging.WARNING, "database", "Database unavailable (serving %s): %s", method or "-", exc)
    return McpJsonRpcError(INTERNAL_ERROR, "Database unavailable: try again shortly", http_status=503)
