"""Server-sent event framing (2026-07-28: no ``id:`` lines, no resumability)."""

from __future__ import annotations

from typing import Any

from .jsonrpc import dumps

SSE_HEADERS = {
    "Cache-Control": "no-cache, no-transform",
    "X-Accel-Buffering": "no",
}


def event(message: Any) -> bytes:
    """One JSON-RPC message as one SSE event."""
    return f"event: message\ndata: {dumps(message)}\n\n".encode()


KEEPALIVE = b": keepalive\n\n"
