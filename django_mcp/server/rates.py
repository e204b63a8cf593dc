"""Rate limits per caller, with django-ratelimit: a fixed window counted atomically (``add``, ``incr``)
in the Django cache its ``RATELIMIT_USE_CACHE`` names, so a limit holds across workers.

``DJANGO_MCP["RATE_LIMIT"]`` bounds every request of one caller (its :attr:`McpRequest.limit_key`:
the principal, or for an anonymous caller its address); ``@tool(rate_limit=...)`` bounds one tool's
calls per caller on top. Past a limit the request answers -32603 with HTTP 429 and ``Retry-After``.
"""

from __future__ import annotations

import hashlib
import logging
from typing import Any

from asgiref.sync import sync_to_async

from ..conf import get_settings
from ..protocol.errors import INTERNAL_ERROR, McpJsonRpcError
from .context import McpRequest
from .notify import unavailable

logger = logging.getLogger("django_mcp")
_CANNOT_COUNT = "Rate limits cannot be counted now: try again shortly"


async def _aenforce(request: McpRequest, rate: str, group: str, what: str) -> None:
    # Imported on first use: django_mcp stays importable from a settings module.
    from django_ratelimit.core import get_usage

    caller = hashlib.sha256(request.limit_key.encode()).hexdigest()[:32]  # never the principal itself

    def key(group: str, http_request: Any) -> str:
        return caller

    def count() -> Any:
        return get_usage(request.http_request, group=group, key=key, rate=rate, increment=True)

    try:
        # An in-memory cache answers on the loop; any other (Redis, the database) in the request's thread.
        usage = count() if _in_memory() else await sync_to_async(count)()
    except Exception as exc:  # the cache is down (a cache backend may raise anything)
        raise unavailable(logger, "rate-cache", "The rate limit cache", exc, _CANNOT_COUNT) from None
    if usage is None or not usage["should_limit"]:
        return
    if usage["limit"] == 0:  # the cache could not count (django-ratelimit fails closed)
        raise McpJsonRpcError(INTERNAL_ERROR, _CANNOT_COUNT, http_status=503)
    retry = max(1, int(usage["time_left"]))
    raise McpJsonRpcError(
        INTERNAL_ERROR,
        f"Rate limit exceeded: at most {rate} {what} per caller; retry in {retry} s",
        {"retryAfterSeconds": retry},
        http_status=429,
        headers={"Retry-After": str(retry)},
    )


def _in_memory() -> bool:
    from django.conf import settings

    backend = settings.CACHES.get(getattr(settings, "RATELIMIT_USE_CACHE", "default"), {}).get("BACKEND", "")
    return str(backend).endswith(("LocMemCache", "DummyCache"))


async def aenforce_request_rate(request: McpRequest) -> None:
    """``RATE_LIMIT`` for every request of a caller (nothing at all while no limit is set)."""
    rate = get_settings().RATE_LIMIT
    if rate is not None:
        await _aenforce(request, rate, "django_mcp:requests", "requests")


async def aenforce_tool_rate(request: McpRequest, tool: str, rate: str) -> None:
    """A tool's own ``rate_limit`` per caller."""
    await _aenforce(request, rate, f"django_mcp:tool:{tool}", f"calls of {tool!r}")
