"""Strict readers of what the endpoint sends: JSON that refuses what the wire must never carry, SSE data."""

from __future__ import annotations

import json
import math
import re
from typing import Any

SURROGATE = "\ud800"

# --------------------------------------------------------------------------- strict readers


def _finite(literal: str) -> float:
    value = float(literal)
    if math.isinf(value):
        raise ValueError(f"{literal} overflows")
    return value


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def sse_data(raw: bytes) -> list[Any]:
    """The messages of an SSE body, read as the SSE spec does (lines end at CR, LF or CRLF only).

    Fails unless every event is ``event: message`` with exactly one ``data:`` line of strict JSON
    and the stream ends with a complete event.
    """
    text = raw.decode("utf-8")
    assert text.endswith("\n\n"), f"unterminated SSE stream: {text[-80:]!r}"
    messages, fields = [], []
    for line in re.split(r"\r\n|\r|\n", text):
        if line:
            fields.append(line)
            continue
        events = [f for f in fields if not f.startswith(":")]  # comments (keep-alives) are no events
        if events:
            assert events[0] == "event: message" and len(events) == 2, events
            assert events[1].startswith("data: "), events
            messages.append(strict_loads(events[1][len("data: ") :]))
        fields = []
    return messages


def strict_loads(data: bytes | str) -> Any:
    """JSON as RFC 8259 has it: strict UTF-8, no NaN/Infinity, no number that overflows a double."""
    text = data.decode("utf-8") if isinstance(data, bytes) else data
    return json.loads(text, parse_constant=_no_constant, parse_float=_finite)
