"""Django's ASGI application, with the OS thread of each request taken from a pool instead of started.

Django serves every ASGI request in an asgiref ``ThreadSensitiveContext``: the request's first sync call
(the ``request_started`` receivers, which every request has) starts a one-thread executor, and the end of
the request starts one more thread to join it. Starting and joining those two threads is most of what a
bare async view costs. :func:`get_asgi_application` keeps those one-thread executors and lends one to each
request, through asgiref's own ``ThreadSensitiveContext(executor=...)``; Django's handler then runs as it
always does, inside that context. A request's sync code still runs on one thread of its own, one request
at a time, as under a threaded WSGI server: so persistent database connections (``CONN_MAX_AGE``) are
reused across requests instead of being left behind with each request's thread.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

import django
from asgiref.sync import ThreadSensitiveContext
from django.core.handlers.asgi import ASGIHandler
from django.db import connections

DEFAULT_IDLE_THREADS = 32
T = TypeVar("T")


class _RequestThread(ThreadPoolExecutor):
    """One request's thread: lent to one request at a time, unless something shut it down meanwhile."""

    retired = False

    def __init__(self) -> None:
        super().__init__(max_workers=1, thread_name_prefix="django-request")
        self._pending: set[Future[Any]] = set()

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        future = super().submit(fn, *args, **kwargs)
        self._pending.add(future)
        future.add_done_callback(self._pending.discard)
        return future

    @property
    def busy(self) -> bool:
        """Whether a call is still queued or running: e.g. a sync view whose client went away, which
        Django stops waiting for but which runs to its end."""
        return bool(self._pending)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        # A listen stream hands its request's thread back by shutting it down: never lend it again.
        self.retired = True
        super().shutdown(wait, cancel_futures=cancel_futures)


class RequestThreads:
    """The idle request threads, most recently used first: a busy server keeps reusing the same few."""

    def __init__(self, max_idle: int = DEFAULT_IDLE_THREADS) -> None:
        if max_idle < 0:
            raise ValueError("max_idle must be 0 or more")
        self.max_idle = max_idle
        self.idle: list[_RequestThread] = []

    def lend(self) -> _RequestThread:
        """An idle thread, or a new one when every one is lent."""
        return self.idle.pop() if self.idle else _RequestThread()

    def give_back(self, thread: _RequestThread) -> None:
        """Keep ``thread`` for the next request; or, past ``max_idle`` or still busy with a call of the
        request that ended, end it once that is done, closing its connections."""
        if thread.retired:
            return
        if len(self.idle) < self.max_idle and not thread.busy:
            self.idle.append(thread)
            return
        thread.submit(connections.close_all)  # what the thread opened goes with it
        thread.shutdown(wait=False)


class PooledThreadsASGIHandler(ASGIHandler):
    """Django's ``ASGIHandler``, each HTTP request served in a ``ThreadSensitiveContext`` of a pooled thread.

    Django's own ``__call__`` runs inside that context: its inner ``ThreadSensitiveContext()`` finds one
    already set and leaves it be, so nothing of Django's request cycle is copied or changed here.
    """

    def __init__(self, max_idle_threads: int = DEFAULT_IDLE_THREADS) -> None:
        super().__init__()
        self.request_threads = RequestThreads(max_idle_threads)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return await super().__call__(scope, receive, send)  # Django's own refusal
        thread = self.request_threads.lend()
        try:
            async with ThreadSensitiveContext(executor=thread):
                await super().__call__(scope, receive, send)
        finally:
            self.request_threads.give_back(thread)


def get_asgi_application(*, max_idle_threads: int = DEFAULT_IDLE_THREADS) -> ASGIHandler:
    """Django's ASGI application (``django.core.asgi.get_asgi_application()``) with its request threads pooled.

    Use it in the project's ``asgi.py`` in place of Django's. Each request still runs its sync code (signal
    receivers, sync middleware and views, sync tools) on one thread, one request at a time; the thread is
    kept for a later request instead of being started and joined for every one. At most
    ``max_idle_threads`` wait between requests; a thread past that closes its database connections and
    ends. Asyncio tasks a request starts must not make thread-sensitive ``sync_to_async`` calls after the
    request has ended (asgiref raises ``RuntimeError`` then): start such tasks in a fresh
    ``contextvars.Context``.
    """
    django.setup(set_prefix=False)  # as Django's get_asgi_application() does
    return PooledThreadsASGIHandler(max_idle_threads)
