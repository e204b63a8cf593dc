"""``django_mcp.asgi``: Django's ASGI application with each request's thread lent from a pool."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from django.core.signals import request_started
from django.db import connections

from django_mcp.asgi import PooledThreadsASGIHandler, RequestThreads, get_asgi_application
from tests.toolapp.tools import EVENTS
from tests.wire import asgi_exchange, asgi_scope, request_body

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def request_threads() -> Iterator[list[threading.Thread]]:
    """The thread each request's ``request_started`` receivers ran on (the request's own sync thread).

    Thread objects, not idents: the system reuses the ident of a thread that ended.
    """
    seen: list[threading.Thread] = []

    def record(**_: Any) -> None:
        seen.append(threading.current_thread())

    request_started.connect(record)
    try:
        yield seen
    finally:
        request_started.disconnect(record)


async def _add(application: Any, a: int = 1) -> dict[str, Any]:
    """``tools/call`` of the sync tool ``add`` through ``application`` (None: Django's own)."""
    body = request_body("tools/call", {"name": "add", "arguments": {"a": a, "b": 2}})
    answer = await asgi_exchange(asgi_scope(body), json.dumps(body).encode(), application)
    assert answer.status_code == 200, answer.content
    return answer.json()


async def test_it_answers_as_djangos_own_application():
    pooled = await _add(get_asgi_application())
    assert pooled["result"]["content"] == [{"type": "text", "text": "3"}]
    assert pooled == await _add(None)  # Django's get_asgi_application()


async def test_consecutive_requests_run_their_sync_code_on_one_reused_thread(request_threads):
    application = get_asgi_application()
    for _ in range(3):
        await _add(application)
    assert len(request_threads) == 3
    assert len(set(request_threads)) == 1
    assert EVENTS["add_thread"] == request_threads[0].ident  # a sync tool runs on its request's thread
    assert request_threads[0].is_alive()  # kept for the next request, not joined
    assert request_threads[0] is not threading.current_thread()  # never the event loop's thread


async def test_djangos_own_application_starts_a_thread_per_request(request_threads):
    # What the pool saves: the reference this module's claim rests on.
    for _ in range(3):
        await _add(None)
    assert len(set(request_threads)) == 3


async def test_concurrent_requests_each_have_a_thread_of_their_own(request_threads):
    both_started = threading.Barrier(2, timeout=5)

    def meet(**_: Any) -> None:
        both_started.wait()  # one shared thread would never get the second request here

    request_started.connect(meet)
    try:
        application = get_asgi_application()
        await asyncio.gather(_add(application, 1), _add(application, 2))
    finally:
        request_started.disconnect(meet)
    assert len(set(request_threads)) == 2
    assert len(application.request_threads.idle) == 2  # both kept, for the next two requests


async def test_a_thread_past_the_idle_limit_closes_its_connections_and_ends(request_threads):
    closed: list[threading.Thread] = []
    original = connections.close_all

    def close_all() -> None:
        closed.append(threading.current_thread())
        original()

    application = get_asgi_application(max_idle_threads=0)
    connections.close_all = close_all  # type: ignore[method-assign]
    try:
        await _add(application)
        deadline = time.monotonic() + 5
        while request_threads[0].is_alive() and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
    finally:
        connections.close_all = original  # type: ignore[method-assign]
    assert not request_threads[0].is_alive()
    assert closed == [request_threads[0]]  # on the thread itself: its connections are thread-local
    assert application.request_threads.idle == []


def test_a_thread_shut_down_while_lent_is_never_lent_again():
    # A listen stream hands its request's thread back by shutting the executor down.
    threads = RequestThreads()
    lent = threads.lend()
    lent.shutdown(wait=True)
    threads.give_back(lent)
    assert threads.idle == []
    assert threads.lend() is not lent


def test_a_thread_still_busy_when_its_request_ended_is_not_lent_again():
    # E.g. a sync view whose client went away: Django stops waiting for it, the call runs to its end.
    threads = RequestThreads()
    lent, go_on = threads.lend(), threading.Event()
    running = lent.submit(go_on.wait, 5)
    threads.give_back(lent)
    assert threads.idle == []
    assert threads.lend() is not lent
    go_on.set()
    assert running.result(timeout=5) is True
    lent.shutdown(wait=True)  # it ends once the call is done (its connections closed after it)


def test_a_thread_whose_calls_are_done_is_lent_again():
    threads = RequestThreads()
    lent = threads.lend()
    lent.submit(int, "7").result(timeout=5)
    threads.give_back(lent)
    assert threads.lend() is lent


def test_the_idle_limit_cannot_be_negative():
    with pytest.raises(ValueError, match="max_idle must be 0 or more"):
        RequestThreads(-1)


async def test_what_is_not_http_gets_djangos_own_refusal():
    with pytest.raises(ValueError, match="Django can only handle ASGI/HTTP connections, not websocket"):
        await PooledThreadsASGIHandler()({"type": "websocket"}, None, None)


def test_asgi_py_may_import_it_before_naming_its_settings():
    # An asgi.py imports get_asgi_application first, as Django's template does, then sets the settings module.
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    code = "import django_mcp.asgi; import django.conf; assert not django.conf.settings.configured"
    assert subprocess.run([sys.executable, "-c", code], env=env, capture_output=True).returncode == 0
