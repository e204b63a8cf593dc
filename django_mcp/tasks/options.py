"""The tasks extension's tool options (``@tool(task_support=..., task_backend=..., ...)``) and their checks."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from ..protocol.errors import invalid_params
from . import gauges  # noqa: F401  (declares the tasks' OpenTelemetry gauges)

if TYPE_CHECKING:
    pass


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


TASK_SUPPORT = ("forbidden", "optional", "required")


def refuse_unstorable(value: Any, where: str) -> None:
    """-32602 for what a JSON column cannot hold everywhere: PostgreSQL's jsonb refuses NUL characters
    and lone surrogates (half of a UTF-16 pair, which no UTF-8 text can carry)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if "\x00" in item:
                raise invalid_params(f"Invalid params: {where} contain a NUL character, which cannot be stored")
            if _LONE_SURROGATE.search(item):
                raise invalid_params(f"Invalid params: {where} contain a lone surrogate, which cannot be stored")
        elif isinstance(item, dict):
            stack += list(item.keys()) + list(item.values())
        elif isinstance(item, list):
            stack += item


def check_task_support(value: Any) -> None:
    if value not in TASK_SUPPORT:
        raise ValueError(f"task_support must be one of {', '.join(TASK_SUPPORT)}, not {value!r}")


def check_backend_alias(value: Any) -> None:
    if value is not None and (not isinstance(value, str) or not value):
        raise ValueError(f"task_backend must be a TASKS alias or None (run in the web process), not {value!r}")


def check_status_message(value: Any) -> None:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"task_status_message must be a non-empty string, not {value!r}")


def check_timeout(value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < float("inf"):
        raise ValueError(f"task_timeout_seconds must be a positive number of seconds, not {value!r}")


def check_flag(value: Any) -> None:
    if not isinstance(value, bool):
        raise ValueError(f"must be True or False, not {value!r}")
