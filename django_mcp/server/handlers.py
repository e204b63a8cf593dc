"""Calling user handlers: async ones on the loop, sync ones in a worker thread."""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable
from functools import lru_cache
from typing import Any

from asgiref.sync import sync_to_async
from django.db import InterfaceError, OperationalError

from ..protocol.errors import INTERNAL_ERROR, McpJsonRpcError
from .mrtr import InputRequired

logger = logging.getLogger("django_mcp")


def call_handler(handler: Callable[..., Any], *args: Any, **kwargs: Any) -> Awaitable[Any]:
    """``handler(*args, **kwargs)`` to await; a sync handler runs off the event loop (safe for the ORM).

    A plain function handing back the handler's own coroutine: no coroutine of its own around it,
    which a running task would keep in memory for as long as it runs.
    """
    try:
        awaitable = _cached_awaitable(handler)
    except TypeError:  # an unhashable callable object
        awaitable = _awaitable(handler)
    return awaitable(*args, **kwargs)


def _awaitable(handler: Callable[..., Any]) -> Callable[..., Awaitable[Any]]:
    if inspect.iscoroutinefunction(handler):
        return handler
    return sync_to_async(handler)


# Inspecting and wrapping a handler costs more than a small tool's whole call: once per handler.
_cached_awaitable = lru_cache(maxsize=1024)(_awaitable)


def first_parameter_takes_request(handler: Callable[..., Any]) -> bool:
    """Whether ``handler``'s first parameter can receive the request positionally."""
    params = list(inspect.signature(handler).parameters.values())
    return bool(params) and params[0].kind in (
        inspect.Parameter.POSITIONAL_ONLY,
        inspect.Parameter.POSITIONAL_OR_KEYWORD,
    )


async def arun_handler(what: str, handler: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Call a prompt, resource or completion handler; an ordinary exception becomes -32603 (traceback logged).

    Protocol errors, MRTR's input request and a lost database pass through.
    """
    try:
        return await call_handler(handler, *args, **kwargs)
    except (McpJsonRpcError, InputRequired, OperationalError, InterfaceError):
        raise
    except Exception as exc:
        logger.error("%s failed", what, exc_info=exc)
        raise McpJsonRpcError(INTERNAL_ERROR, f"{what} failed: {type(exc).__name__}: {exc}") from None
