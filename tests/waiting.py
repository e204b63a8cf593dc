"""Waiting for something to happen in a test: a condition polled against a deadline, never a fixed sleep."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from types import ModuleType, SimpleNamespace

import pytest


async def until(condition: Callable[[], object], timeout: float = 10.0, what: str = "the condition") -> None:
    """Return as soon as ``condition()`` is true; fail after ``timeout`` seconds saying ``what`` never came."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} never came within {timeout:g} s")
        await asyncio.sleep(0.01)


class MonotonicClock:
    """``time.monotonic`` as the modules given to :func:`move_monotonic` see it: moved on by a test instead of
    waiting out a lease, a probe period or a timeout (time-machine moves wall-clock time only)."""

    def __init__(self) -> None:
        self.ahead = 0.0

    def monotonic(self) -> float:
        return time.monotonic() + self.ahead


def move_monotonic(monkeypatch: pytest.MonkeyPatch, *modules: ModuleType) -> MonotonicClock:
    """Give ``modules`` (each of which does ``import time`` and reads only ``time.monotonic``) a clock to move."""
    clock = MonotonicClock()
    for module in modules:
        monkeypatch.setattr(module, "time", SimpleNamespace(monotonic=clock.monotonic))
    return clock
