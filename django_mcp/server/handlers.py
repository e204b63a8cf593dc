"""Calling user handlers: async ones on the loop, sync ones in a worker thread."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from asgiref.sync import sync_to_async


async def call_handler(handler: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Await ``handler(*args, **kwargs)``; a sync handler runs off the event loop (safe for the ORM)."""
    if inspect.iscoroutinefunction(handler):
        return await handler(*args, **kwargs)
    return await sync_to_async(handler)(*args, **kwargs)


def first_parameter_takes_request(handler: Callable[..., Any]) -> bool:
    """Whether ``handler``'s first parameter can receive the request positionally."""
    params = list(inspect.signature(handler).parameters.values())
    return bool(params) and params[0].kind in (
        inspect.Parameter.POSITIONAL_ONLY,
        inspect.Parameter.POSITIONAL_OR_KEYWORD,
    )
