"""The one response builder of both eras: JSON when the handler only answers, SSE when it speaks first."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from django.db import InterfaceError, OperationalError
from django.http import HttpResponse, HttpResponseBase

from ..protocol import sse
from ..protocol.errors import INTERNAL_ERROR, McpJsonRpcError
from ..protocol.jsonrpc import error_response, result_response
from ..server import telemetry
from ..server.listen import ListenStream
from ..server.request import McpRequest
from .http import warn_wsgi_once
from .responses import database_unavailable, json_response, sse_response

if TYPE_CHECKING:
    from .mounted import MountedServer

logger = logging.getLogger("django_mcp")

Outcome = tuple[dict[str, Any], int, "Mapping[str, str] | None"]  # a JSON-RPC response, its HTTP status and headers
Served = dict[str, Any] | ListenStream
T = TypeVar("T")


class Outbox:
    """What a handler sends before its response; the first message, or the response, wakes the view."""

    def __init__(self) -> None:
        # Made by the first message: most requests send none (a queue is four deques, ~2.5 KB).
        self.queue: asyncio.Queue[dict[str, Any]] | None = None
        self.woken: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def put(self, message: dict[str, Any]) -> None:
        if self.queue is None:
            self.queue = asyncio.Queue()
        self.queue.put_nowait(message)
        self.wake()

    def wake(self, *_: Any) -> None:
        if not self.woken.done():
            self.woken.set_result(None)


async def aensure_started(server: MountedServer, request: McpRequest) -> None:
    """Start the server's extensions on this loop (ASGI); under WSGI their loops would end with the request."""
    if request.served_by_asgi:
        await server.astarted()
    else:
        warn_wsgi_once()


def atraced(server: MountedServer, request: McpRequest, serve: Callable[[], Awaitable[T]]) -> Awaitable[T]:
    """``serve()``, in a span when tracing is on."""
    if not telemetry.active():
        return serve()

    def known(method: str, name: str) -> bool:
        return (server.tools if method == "tools/call" else server.prompts).get(name) is not None

    return telemetry.atraced(request, serve, known)


async def arespond(request: McpRequest, outbox: Outbox, serve: Coroutine[Any, Any, Served]) -> HttpResponseBase:
    """Answer ``request``: JSON, or SSE when the handler sends a message first or ``serve`` opens a listen stream."""
    if not request.served_by_asgi:
        return await _arespond_whole(request, outbox, serve)
    work = _start(_aoutcome(request, serve))
    if work.done():  # answered without waiting (e.g. tasks/get read on the loop)
        request.finish()
    else:
        work.add_done_callback(lambda _: request.finish())
        work.add_done_callback(outbox.wake)
        try:
            # Answer plain JSON unless the handler has something to say before it
            # finishes: every mandated 4xx is known before we commit to SSE.
            await outbox.woken
        except asyncio.CancelledError:  # the client went away: cancel the handler
            work.cancel()
            raise
    if work.done() and outbox.queue is None:
        outcome = work.result()
        if isinstance(outcome, ListenStream):
            return sse_response(outcome.aevents())
        return json_response(*outcome)
    assert outbox.queue is not None  # woken by a message (the handler has not finished, or sent one first)
    return sse_response(_astream(outbox.queue, work))


def _start(work: Coroutine[Any, Any, Outcome | ListenStream]) -> asyncio.Future[Outcome | ListenStream]:
    """``work`` as a task, run at once up to its first wait (Python 3.12's eager start; on 3.11 scheduled).

    A request that never waits (``tasks/get`` read on the loop) is then answered without a task
    switch, and one that does starts its work without waiting a turn of the loop. A loop with a task
    factory (tracing, monitoring) makes the task itself, as before.
    """
    loop = asyncio.get_running_loop()
    if sys.version_info >= (3, 12) and loop.get_task_factory() is None:
        return asyncio.Task(work, loop=loop, eager_start=True)
    return loop.create_task(work)


async def _arespond_whole(request: McpRequest, outbox: Outbox, serve: Coroutine[Any, Any, Served]) -> HttpResponse:
    """Under WSGI: the whole answer once the handler is done, its messages first (SSE) if it sent any.

    A WSGI server runs this view on an event loop that ends with the response, so nothing may
    stream after it: the handler runs to its end here.
    """
    try:
        outcome = await _aoutcome(request, serve)
    finally:
        request.finish()
    assert not isinstance(outcome, ListenStream)  # subscriptions/listen refuses a request served over WSGI
    if outbox.queue is None:
        return json_response(*outcome)
    events = [sse.event(outbox.queue.get_nowait()) for _ in range(outbox.queue.qsize())]
    return HttpResponse(
        b"".join([*events, sse.event(outcome[0])]), content_type="text/event-stream", headers=sse.SSE_HEADERS
    )


async def _aoutcome(request: McpRequest, serve: Coroutine[Any, Any, Served]) -> Outcome | ListenStream:
    """The JSON-RPC response for a request (result or error, never an exception), or a listen stream."""
    try:
        result = await serve
        if isinstance(result, ListenStream):
            return result
        return result_response(request.id, result), 200, None
    except McpJsonRpcError as exc:
        return error_response(request.id, exc), exc.http_status, exc.headers
    except asyncio.CancelledError:
        raise
    except (OperationalError, InterfaceError) as exc:
        unavailable = database_unavailable(exc, request.method)
        return error_response(request.id, unavailable), unavailable.http_status, unavailable.headers
    except Exception:
        logger.exception("Internal error serving %s", request.method)
        return error_response(request.id, McpJsonRpcError(INTERNAL_ERROR, "Internal error")), 200, None


async def _astream(
    notifications: asyncio.Queue[dict[str, Any]], work: asyncio.Future[Outcome | ListenStream]
) -> AsyncIterator[bytes]:
    try:
        while not notifications.empty():
            yield sse.event(notifications.get_nowait())
        while not work.done():
            getter = asyncio.ensure_future(notifications.get())
            await asyncio.wait((work, getter), return_when=asyncio.FIRST_COMPLETED)
            if getter.done():
                yield sse.event(getter.result())
            else:
                getter.cancel()
        while not notifications.empty():
            yield sse.event(notifications.get_nowait())
        outcome = work.result()
        assert not isinstance(outcome, ListenStream)  # listen emits nothing before it streams
        yield sse.event(outcome[0])
    finally:
        # Client disconnect (CancelledError at a yield or await): stop the handler.
        if not work.done():
            work.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await work
