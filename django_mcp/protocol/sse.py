"""Server-sent event framing (2026-07-28: no ``id:`` lines, no resumability)."""

from __future__ import annotations

import re
from typing import Any

from .jsonrpc import dumps

SSE_HEADERS = {
    "Cache-Control": "no-cache, no-transform",
    "X-Accel-Buffering": "no",
}

# SSE ends lines at CR and LF only, and dumps() already escapes those; but readers that split on
# Unicode line boundaries (Python's str.splitlines, for one) also break at NEL, LS and PS. Escaped,
# they mean the same inside a JSON string and every data line stays one line for any reader.
_UNICODE_LINE_BREAKS = re.compile("[\x85\u2028\u2029]")


def event(message: Any) -> bytes:
    """One JSON-RPC message as one SSE event: a single ``data:`` line of JSON, UTF-8 encoded.

    Cannot fail on a JSON-shaped message, whatever its strings hold (see ``jsonrpc.dumps``).
    """
    return f"event: message\ndata: {_one_line(dumps(message))}\n\n".encode()


def _one_line(data: str) -> str:
    if data.isascii():  # O(1) in CPython: the usual case costs nothing
        return data
    return _UNICODE_LINE_BREAKS.sub(lambda m: f"\\u{ord(m.group()):04x}", data)


KEEPALIVE = b": keepalive\n\n"
OPENED = b": open\n\n"  # an SSE comment: the first bytes of a stream that has no event to send yet
