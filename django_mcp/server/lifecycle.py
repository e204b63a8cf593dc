"""Graceful shutdown: on SIGTERM/SIGINT, close listen streams and let extensions wind down, then stop.

Signals belong to the process, so this is the one process-wide object:
:data:`lifecycle`. The ASGI server (daphne, uvicorn) installs its own signal
handlers; ours are chained in front of them from the event loop's thread on
the first request, and call the server's handler once the shutdown hooks are
done. A second signal stops at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import threading
from collections.abc import Awaitable, Callable
from types import FrameType
from typing import Any

from ..conf import get_settings
from .listen import close_listen_streams

logger = logging.getLogger("django_mcp")

ShutdownHook = Callable[[float], Awaitable[None]]


class Lifecycle:
    """This process's shutdown state and the hooks to run at graceful shutdown."""

    def __init__(self) -> None:
        self.hooks: list[ShutdownHook] = []
        self.stopping = False
        self._installed = False
        self._graceful: set[asyncio.Task[None]] = set()
        self.loop: asyncio.AbstractEventLoop | None = None
        """The loop serving requests in this process (recorded at the first request)."""

    def on_shutdown(self, hook: ShutdownHook) -> ShutdownHook:
        """Register ``hook(grace_seconds)`` to run at graceful shutdown (servers add their extensions')."""
        self.hooks.append(hook)
        return hook

    def install_signal_handlers(self, loop: asyncio.AbstractEventLoop | None = None) -> bool:
        """Chain our graceful shutdown in front of the current SIGTERM/SIGINT handlers (once, main thread only).

        ``loop`` is where the shutdown runs (default: the running loop). Returns whether handlers were installed.
        """
        if self.loop is None:
            with contextlib.suppress(RuntimeError):
                self.loop = asyncio.get_running_loop()
        if self._installed or threading.current_thread() is not threading.main_thread():
            return False
        if not get_settings().SHUTDOWN_SIGNALS:
            return False
        self._installed = True
        target = loop if loop is not None else asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            previous = signal.getsignal(sig)

            def handler(signum: int, frame: FrameType | None, previous: Any = previous) -> None:
                if self.stopping:  # second signal: stop now
                    _pass_on(previous, signum, frame)
                    return
                self.stopping = True
                target.call_soon_threadsafe(self._start_graceful, previous, signum)

            signal.signal(sig, handler)
        return True

    def chain_from_main_thread(self) -> None:
        """Under ``runserver``'s autoreloader the server runs in a thread, not the main one: chain our
        shutdown in front of the main thread's handlers now (Django's reloader exits on SIGTERM).

        The handler runs the graceful shutdown on the serving loop and waits for it (at most the grace
        period and a margin), then hands over to the previous handler.
        """
        if self._installed or threading.current_thread() is not threading.main_thread():
            return
        if not get_settings().SHUTDOWN_SIGNALS:
            return
        self._installed = True
        for sig in (signal.SIGTERM, signal.SIGINT):
            previous = signal.getsignal(sig)

            def handler(signum: int, frame: FrameType | None, previous: Any = previous) -> None:
                loop = self.loop
                if loop is not None and loop.is_running() and not self.stopping:
                    self.stopping = True
                    done = asyncio.run_coroutine_threadsafe(self.agraceful_shutdown(), loop)
                    with contextlib.suppress(Exception):
                        done.result(timeout=get_settings().SHUTDOWN_GRACE_SECONDS + 15)
                _pass_on(previous, signum, frame)

            signal.signal(sig, handler)

    def _start_graceful(self, previous: Any, signum: int) -> None:
        task = asyncio.ensure_future(self.agraceful_shutdown(previous, signum))
        self._graceful.add(task)
        task.add_done_callback(self._graceful.discard)

    async def agraceful_shutdown(self, previous: Any = None, signum: int | None = None) -> None:
        """Close listen streams, run the shutdown hooks within the grace period, then hand over to the server."""
        self.stopping = True
        grace = get_settings().SHUTDOWN_GRACE_SECONDS
        closed = close_listen_streams()
        logger.warning("Shutting down gracefully: %d listen stream(s) closed, %.1f s grace", closed, grace)
        await asyncio.sleep(0.05)  # let the streams flush their final frames
        results = await asyncio.gather(*(hook(grace) for hook in self.hooks), return_exceptions=True)
        for result in results:
            if isinstance(result, BaseException):
                logger.error("A shutdown hook failed", exc_info=result)
        if signum is not None:
            _pass_on(previous, signum, None)


def _pass_on(previous: Any, signum: int, frame: FrameType | None) -> None:
    if callable(previous):
        previous(signum, frame)
    elif previous == signal.SIG_IGN:
        return
    else:  # the default action: restore it and re-raise the signal
        with contextlib.suppress(Exception):
            signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)


lifecycle = Lifecycle()
"""This process's lifecycle (signals are process-wide)."""


def shutting_down() -> bool:
    """Whether this process has begun a graceful shutdown (new work should be refused)."""
    return lifecycle.stopping
