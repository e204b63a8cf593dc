"""Rate limits per caller: django-ninja's throttle, counted in a Django cache shared by the workers.

``DJANGO_MCP["RATE_LIMIT"]`` bounds every request of one caller (its :attr:`McpRequest.limit_key`:
the principal, or for an anonymous caller its address); ``@tool(rate_limit=...)`` bounds one tool's
calls per caller on top. Past a limit the request answers -32603 with HTTP 429 and ``Retry-After``.
"""

from __future__ import annotations

import hashlib
import math
from functools import cache
from typing import Any

from ..conf import get_settings
from ..protocol.errors import INTERNAL_ERROR, McpJsonRpcError
from .context import McpRequest


@cache
def _throttle_class() -> type[Any]:
    # Imported on first use: importing ninja reads Django's settings, and django_mcp must stay
    # importable from a settings module.
    from django.core.cache import caches
    from django.http import HttpRequest
    from ninja.throttling import SimpleRateThrottle

    class CallerThrottle(SimpleRateThrottle):
        """``rate`` requests per caller and ``scope``, in ``DJANGO_MCP["RATE_LIMIT_CACHE"]``.

        One per check: ninja's throttle keeps the check's state on itself, and Django's cache handles
        are per thread (under WSGI each request has a thread and a loop of its own).
        """

        def __init__(self, rate: str, scope: str, caller: str) -> None:
            self.scope = scope
            super().__init__(rate)
            self.cache = caches[get_settings().RATE_LIMIT_CACHE]
            self.caller = caller

        def get_cache_key(self, request: HttpRequest) -> str:
            ident = hashlib.sha256(self.caller.encode()).hexdigest()[:32]  # never the principal itself
            return f"django_mcp:rate:{self.scope}:{ident}"

    return CallerThrottle


def _enforce(request: McpRequest, rate: str, scope: str, what: str) -> None:
    throttle = _throttle_class()(rate, scope, request.limit_key)
    if throttle.allow_request(request.http_request):
        return
    retry = max(1, math.ceil(throttle.wait() or throttle.duration or 1))
    raise McpJsonRpcError(
        INTERNAL_ERROR,
        f"Rate limit exceeded: at most {rate} {what} per caller; retry in {retry} s",
        {"retryAfterSeconds": retry},
        http_status=429,
        headers={"Retry-After": str(retry)},
    )


def enforce_request_rate(request: McpRequest) -> None:
    """``RATE_LIMIT`` for every request of a caller (a cache call on the loop when a limit is set)."""
    rate = get_settings().RATE_LIMIT
    if rate is not None:
        _enforce(request, rate, "requests", "requests")


def enforce_tool_rate(request: McpRequest, tool: str, rate: str) -> None:
    """A tool's own ``rate_limit`` per caller."""
    _enforce(request, rate, f"tool:{tool}", f"calls of {tool!r}")
