"""Waiting for something to happen in a test: a condition polled against a deadline, never a fixed sleep."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable


async def until(condition: Callable[[], object], timeout: float = 10.0, what: str = "the condition") -> None:
    """Return as soon as ``condition()`` is true; fail after ``timeout`` seconds saying ``what`` never came."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} never came within {timeout:g} s")
        await asyncio.sleep(0.01)
