"""Outages of the services the server needs: logged a bounded number of times, answered with 503."""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from ..protocol.errors import INTERNAL_ERROR, McpJsonRpcError

REPEAT_WINDOW_SECONDS = 60.0
"""During an outage, each kind of failure logs its first occurrence, then at most one line per window."""


class Throttle:
    """A log line per key at most once per ``window`` seconds, saying how many were held back since.

    ``log`` answers whether it logged. ``recovered`` logs one line when a failing key works again.
    """

    def __init__(self, window: float = REPEAT_WINDOW_SECONDS) -> None:
        self.window = window
        self._last: dict[str, float] = {}
        self._held: dict[str, int] = {}
        self._failures: dict[str, int] = {}
        self._lock = threading.Lock()  # broadcast() may run in any thread

    def log(self, log: logging.Logger, level: int, key: str, message: str, *args: Any, exc_info: Any = None) -> bool:
        now = time.monotonic()
        with self._lock:
            self._failures[key] = self._failures.get(key, 0) + 1
            last = self._last.get(key)
            if last is not None and now - last < self.window:
                self._held[key] = self._held.get(key, 0) + 1
                return False
            held = self._held.pop(key, 0)
            self._last[key] = now
            first = last is None
        if held:
            message += " (%d more like this in the last %.0f s)"
            args = (*args, held, now - last if last is not None else 0.0)
        # A traceback only the first time: the repeats are the same story.
        log.log(level, message, *args, exc_info=exc_info if first else None)
        return True

    def recovered(self, log: logging.Logger, key: str, message: str) -> None:
        with self._lock:
            failures = self._failures.pop(key, 0)
            self._last.pop(key, None)
            self._held.pop(key, None)
        if failures:
            log.warning("%s (after %d failure(s))", message, failures)

    def failing(self, key: str) -> bool:
        return key in self._failures

    def reset(self) -> None:
        """Forget every failure (tests: each sees the first failure of its outage)."""
        with self._lock:
            self._last.clear()
            self._held.clear()
            self._failures.clear()


throttle = Throttle()
"""The throttle of every repeated failure django_mcp logs about the channel layer."""


def unavailable(log: logging.Logger, key: str, what: str, exc: BaseException, answer: str) -> McpJsonRpcError:
    """The 503 a request gets when a service it needs (``what``) failed with ``exc``; logged once a minute."""
    throttle.log(log, logging.WARNING, key, "%s unavailable: %r", what, exc)
    return McpJsonRpcError(INTERNAL_ERROR, answer, http_status=503)


class RepeatFilter(logging.Filter):
    """A logging filter: a record whose message template was seen within ``window`` seconds is dropped.

    The next record that passes says how many were dropped. django_mcp puts one on the
    ``channels_redis.pubsub`` logger (see :func:`quiet_layer_logs`), whose receive loop logs a traceback
    every second while Redis is unreachable, and one per channel cleaned up during an outage.
    """

    def __init__(self, window: float = REPEAT_WINDOW_SECONDS) -> None:
        super().__init__()
        self.window = window
        self._last: dict[str, float] = {}
        self._held: dict[str, int] = {}
        self._lock = threading.Lock()

    def filter(self, record: logging.LogRecord) -> bool:
        key = str(record.msg)
        now = time.monotonic()
        with self._lock:
            last = self._last.get(key)
            if last is not None and now - last < self.window:
                self._held[key] = self._held.get(key, 0) + 1
                return False
            self._last[key] = now
            held = self._held.pop(key, 0)
        if held:
            record.msg = f"{record.msg} ({held} more like this in the last {now - (last or now):.0f} s, not logged)"
            record.exc_info = None  # the same traceback as the first one
            record.exc_text = None
        return True


_LAYER_LOGGERS = ("channels_redis.pubsub",)


def quiet_layer_logs() -> None:
    """Put a :class:`RepeatFilter` on the channel layer libraries' loggers (once)."""
    for name in _LAYER_LOGGERS:
        layer_logger = logging.getLogger(name)
        if not any(isinstance(f, RepeatFilter) for f in layer_logger.filters):
            layer_logger.addFilter(RepeatFilter())
