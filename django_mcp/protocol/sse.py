"""Server-sent event framing (2026-07-28: no ``id:`` lines, no resumability)."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
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


async def amessages(chunks: AsyncIterator[bytes | str]) -> AsyncIterator[Any]:
    """The JSON messages of an SSE body, as a client reads them (comments and keep-alives skipped)."""
    buffer = b""
    async for chunk in chunks:
        buffer += chunk.encode() if isinstance(chunk, str) else chunk
        while b"\n\n" in buffer:
            block, buffer = buffer.split(b"\n\n", 1)
            data = [line[5:].strip() for line in block.split(b"\n") if line.startswith(b"data:")]
            if data:
                yield json.loads(b"\n".join(data))
