"""A listen stream holds no OS thread: the one Django keeps for its request is handed back."""

from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from asgiref.sync import sync_to_async
from django.db import connections

from ...compat import request_thread_executors

logger = logging.getLogger("django_mcp")


async def arelease_request_thread() -> None:
    """Let go of the OS thread Django's ASGI handler keeps for this request while the stream is open.

    Django serves each request in an asgiref ``ThreadSensitiveContext``: the first sync call of the
    request (the ``request_started`` receivers, sync middleware, the session) starts a one-thread
    executor that lives until the response is finished, i.e. as long as a listen stream stays open:
    a thread and some 70 KB per stream. Nothing sync runs while a stream waits, so close the
    database connections of that thread in it (what ``request_finished`` would have done: pooled
    connections go back to the pool) and shut the executor down. The request's later sync calls
    (Django's ``response.close()`` at the end) run on a small pool shared by all released streams,
    so thousands of streams ending at once start no thread each. Under ``django_mcp.asgi`` the thread
    was lent from its pool: shut down, it is not lent again.
    """
    found = request_thread_executors()
    if found is None or found[0] is None:
        return  # not under Django's ASGI handler (e.g. a test client): nothing held
    context, executors = found
    executor: Any = executors.get(context)
    if executor is None:
        return
    await sync_to_async(connections.close_all)()
    if executors.get(context) is executor:
        executors[context] = _stream_end_executor
    executor.shutdown(wait=False)


class _SharedExecutor(ThreadPoolExecutor):
    """The pool the released streams' requests end on: shared, so never shut down by one of them.

    asgiref's ``ThreadSensitiveContext`` shuts a request's executor down at its end, joining it in a
    thread of its own when the executor is truthy: this one is falsy, so no thread is started.
    """

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Left running: other requests end on it."""

    def __bool__(self) -> bool:
        return False


_stream_end_executor = _SharedExecutor(max_workers=4, thread_name_prefix="django-mcp-stream-end")
"""Process-wide by nature: a bounded pool for the ends of every released listen stream's request."""
