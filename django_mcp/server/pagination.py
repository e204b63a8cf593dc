"""Opaque list cursors and pages."""

from __future__ import annotations

import base64
import binascii
from typing import TypeVar

from ..protocol.errors import invalid_params

T = TypeVar("T")
_PREFIX = "offset:"


def encode_cursor(offset: int) -> str:
    return base64.urlsafe_b64encode(f"{_PREFIX}{offset}".encode()).decode("ascii")


def decode_cursor(cursor: object, total: int) -> int:
    """The offset a cursor stands for; -32602 for anything we did not hand out."""
    if cursor is None:
        return 0
    try:
        if not isinstance(cursor, str):
            raise ValueError
        text = base64.urlsafe_b64decode(cursor.encode("ascii")).decode("ascii")
        if not text.startswith(_PREFIX):
            raise ValueError
        offset = int(text[len(_PREFIX) :])
        if not 0 < offset <= total or encode_cursor(offset) != cursor:
            raise ValueError
    except (ValueError, UnicodeError, binascii.Error):
        raise invalid_params("Invalid cursor", {"cursor": cursor}) from None
    return offset


def paginate(items: list[T], cursor: object, page_size: int) -> tuple[list[T], str | None]:
    """One page of ``items`` from ``cursor``, and the cursor of the next page (None at the end)."""
    start = decode_cursor(cursor, len(items))
    end = start + page_size
    return items[start:end], encode_cursor(end) if end < len(items) else None
