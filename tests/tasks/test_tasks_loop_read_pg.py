"""``tasks/get``'s read from the event loop on PostgreSQL: what it reads, its pool's hand-overs and life."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import os
import time
import uuid
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any
from unittest import mock

import psycopg
import pytest
from asgiref.sync import sync_to_async
from django.core.exceptions import FieldDoesNotExist
from django.db import connections
from django.db.backends.signals import connection_created
from django.utils import timezone

from django_mcp.models import Task
from django_mcp.tasks.plugin import _GET_FIELDS as GET_FIELDS
from django_mcp.tasks.store import loop_postgres, operations
from django_mcp.tasks.store.loop_postgres import aread_visible as read_visible
from django_mcp.tasks.store.prepared import USE_STORE
from django_mcp.tasks.wire import detailed_task
from tests.task_rows import OWNER
from tests.task_rows import make_task as _task
from tests.task_rows import task_fields as _fields
from tests.task_servers import tasks_server
from tests.waiting import until

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(os.environ.get("DJANGO_MCP_DATABASE") != "postgres", reason="PostgreSQL's read path"),
]

PLUGIN = tasks_server.extension_plugins[0]


@pytest.fixture(autouse=True)
def _fresh_pools(settings):
    settings.DJANGO_MCP = {**settings.DJANGO_MCP, "TASK_FAST_PATHS": True}  # what this module tests
    # Long enough that a hand-over the tests expect never times out on a slow machine (they patch it down
    # to see the time-out), and that a wait that should not happen would show.
    with mock.patch.object(loop_postgres, "WAIT_SECONDS", 5.0):
        yield
    for loop_pools in list(loop_postgres._loops.values()):
        loop_pools.close_idle()
    loop_postgres._loops.clear()
    loop_postgres._elsewhere.discard("default")


def _held() -> loop_postgres._DatabasePool:
    return loop_postgres._loops[asyncio.get_running_loop()].pools["default"]


def _stats() -> dict[str, int]:
    return _held().pool.get_stats()


async def _opened() -> loop_postgres._DatabasePool:
    """The loop's pool, once its second read (the store answers both) has opened it, with a connection ready."""
    for _ in range(2):
        assert await read_visible(str(uuid.uuid4()), OWNER) is USE_STORE
    await _held().pool.wait(5)
    assert _held().ready
    return _held()


async def _the_link() -> Any:
    """The pool's one idle connection (taken and given back)."""
    pool = _held().pool
    link = await pool.getconn(1)
    await pool.putconn(link)
    return link


@contextlib.asynccontextmanager
async def _in_use() -> AsyncIterator[Any]:
    """A connection taken as a read takes it: a statement of another request in flight."""
    held = _held()
    link = await held.pool.getconn(5)
    held.in_use += 1
    try:
        yield link
    finally:
        await loop_postgres._agive_back(held, link)


def _wrapper(**changes):
    """A PostgreSQL wrapper for the default alias as Django would make it, with some settings changed."""
    settings = {**connections["default"].settings_dict, **changes}
    return type(connections["default"])(settings, "default")


async def test_reads_the_task_as_the_store_does():
    task = await sync_to_async(_task)(
        status="completed",
        status_message="Done",
        result={"content": [{"type": "text", "text": "ünïcode"}]},
        arguments={"n": 1.5},
        request_meta={"progressToken": 7},
    )
    await _opened()
    read = await read_visible(str(task.id), OWNER)
    assert isinstance(read, Task)
    assert _fields(read) == _fields(await sync_to_async(operations.visible)(task.id, OWNER))
    assert read._state.db == "default" and not read._state.adding
    narrow = await read_visible(str(task.id), OWNER, GET_FIELDS)
    assert isinstance(narrow, Task) and detailed_task(narrow) == detailed_task(task)
    assert "arguments" in narrow.get_deferred_fields()


async def test_another_owner_an_unknown_id_and_a_malformed_one_read_nothing():
    task = await sync_to_async(_task)()
    await _opened()
    assert await read_visible(str(task.id), "sha256:" + "b" * 64) is None
    assert await read_visible(str(uuid.uuid4()), OWNER) is None
    assert await read_visible("not-a-uuid", OWNER) is None


async def test_an_expired_task_goes_to_the_store_which_deletes_it():
    task = await sync_to_async(_task)(expires_at=timezone.now() - timedelta(seconds=1))
    await _opened()
    assert await read_visible(str(task.id), OWNER) is USE_STORE
    assert await PLUGIN.store.avisible(str(task.id), OWNER) is None
    assert not await Task.objects.filter(pk=task.id).aexists()


async def test_tasks_visible_reads_on_the_loop_without_the_store_threads():
    task = await sync_to_async(_task)()
    await _opened()
    with mock.patch.object(PLUGIN.store, "_avisible_in_threads", side_effect=AssertionError("went to the pool")):
        found = await PLUGIN.store.avisible(str(task.id), OWNER, GET_FIELDS)
        again = await PLUGIN.store.avisible(str(task.id), OWNER, GET_FIELDS)
    assert found is not None and again is not None and found.id == again.id == task.id
    assert _held().in_use == 0 and _stats()["pool_available"] == 1


async def test_reads_that_find_every_connection_in_use_are_handed_it_in_turn(settings):
    settings.DJANGO_MCP = {**settings.DJANGO_MCP, "TASK_LOOP_CONNECTIONS": 1}
    tasks = [await sync_to_async(_task)(status_message=str(n)) for n in range(3)]
    await _opened()
    link = await _the_link()
    with mock.patch.object(PLUGIN.store, "_avisible_in_threads", side_effect=AssertionError("went to the pool")):
        found = await asyncio.gather(*(PLUGIN.store.avisible(str(t.id), OWNER) for t in tasks))
    assert [t.status_message for t in found] == ["0", "1", "2"]
    assert await _the_link() is link and _held().in_use == 0 and _stats()["pool_size"] == 1


async def test_a_read_waits_for_a_connection_in_use_no_longer_than_wait_seconds(settings):
    settings.DJANGO_MCP = {**settings.DJANGO_MCP, "TASK_LOOP_CONNECTIONS": 1}
    task = await sync_to_async(_task)()
    await _opened()
    async with _in_use():  # a statement stuck on a dropped network
        with mock.patch.object(loop_postgres, "WAIT_SECONDS", 0.01):
            assert await read_visible(str(task.id), OWNER) is USE_STORE
            assert (await PLUGIN.store.avisible(str(task.id), OWNER)).id == task.id  # the store's threads answer
    assert _held().in_use == 0 and _stats()["requests_waiting"] == 0 and _stats()["pool_size"] == 1


async def test_a_read_finds_a_free_connection_at_once_when_none_is_in_use(settings):
    """Only a connection in use is worth waiting for: with none in use the pool is replacing one."""
    task = await sync_to_async(_task)()
    await _opened()
    async with _in_use() as link:
        link.pgconn.finish()  # it broke; given back, the pool opens another in the background
    with mock.patch.object(connections["default"].Database.AsyncConnection, "connect", side_effect=OSError("down")):
        with mock.patch.object(loop_postgres, "NO_WAIT_SECONDS", 0.01):
            assert await read_visible(str(task.id), OWNER) is USE_STORE  # did not wait WAIT_SECONDS
    assert _held().in_use == 0


async def test_a_read_with_a_misspelt_field_leaves_the_connection_it_was_handed_free(settings):
    settings.DJANGO_MCP = {**settings.DJANGO_MCP, "TASK_LOOP_CONNECTIONS": 1}
    task = await sync_to_async(_task)()
    await _opened()
    async with _in_use():
        misspelt = asyncio.ensure_future(read_visible(str(task.id), OWNER, ("stauts",)))
        await until(lambda: _stats()["requests_waiting"])
    with pytest.raises(FieldDoesNotExist):  # handed the connection, then refused by the model
        await misspelt
    assert _held().in_use == 0 and isinstance(await read_visible(str(task.id), OWNER), Task)


async def test_a_read_cancelled_once_handed_a_connection_passes_it_on(settings):
    settings.DJANGO_MCP = {**settings.DJANGO_MCP, "TASK_LOOP_CONNECTIONS": 1}
    task = await sync_to_async(_task)()
    await _opened()
    link = await _the_link()
    async with _in_use():
        first, second = (asyncio.ensure_future(read_visible(str(task.id), OWNER)) for _ in range(2))
        await until(lambda: _stats()["requests_waiting"] == 2)
    first.cancel()  # handed the connection, before it has run again
    # psycopg_pool lets a cancellation that comes after the hand-over go: the read ends as it would have.
    (outcome,) = await asyncio.gather(first, return_exceptions=True)
    assert isinstance(outcome, (Task, asyncio.CancelledError))
    assert isinstance(await second, Task) and (await second).id == task.id
    assert _held().in_use == 0 and not link.closed and await _the_link() is link


async def test_while_every_connection_is_in_use_another_opens_up_to_the_setting(settings):
    settings.DJANGO_MCP = {**settings.DJANGO_MCP, "TASK_LOOP_CONNECTIONS": 3}
    task = await sync_to_async(_task)()
    await _opened()
    async with contextlib.AsyncExitStack() as stack:
        await stack.enter_async_context(_in_use())  # a request of this loop is reading on it
        with mock.patch.object(PLUGIN.store, "_avisible_in_threads", side_effect=AssertionError("to the pool")):
            # Both wait: more connections open, and are handed to them.
            found = await asyncio.gather(*(PLUGIN.store.avisible(str(task.id), OWNER) for _ in range(2)))
        assert all(t.id == task.id for t in found) and _stats()["pool_size"] >= 2
        for _ in range(2):
            await stack.enter_async_context(_in_use())
        with mock.patch.object(loop_postgres, "WAIT_SECONDS", 0.01):
            assert await read_visible(str(task.id), OWNER) is USE_STORE  # all in use, and three is the most
        assert _stats()["pool_size"] == 3
    assert isinstance(await read_visible(str(task.id), OWNER), Task)


async def test_no_loop_connection_with_the_setting_at_zero(settings):
    settings.DJANGO_MCP = {**settings.DJANGO_MCP, "TASK_LOOP_CONNECTIONS": 0}
    task = await sync_to_async(_task)()
    for _ in range(3):
        assert await read_visible(str(task.id), OWNER) is USE_STORE
    assert await PLUGIN.store.avisible(str(task.id), OWNER) is not None  # the store answers
    assert asyncio.get_running_loop() not in loop_postgres._loops


async def test_changing_the_setting_closes_the_pool_and_opens_one_of_the_new_size(settings):
    task = await sync_to_async(_task)()
    old = await _opened()
    settings.DJANGO_MCP = {**settings.DJANGO_MCP, "TASK_LOOP_CONNECTIONS": 1}
    assert await read_visible(str(task.id), OWNER) is USE_STORE  # to the store while the new one opens
    await until(lambda: old.pool.closed)
    await _held().pool.wait(5)
    assert _held() is not old and _held().pool.max_size == 1
    assert isinstance(await read_visible(str(task.id), OWNER), Task)
    settings.DJANGO_MCP = {**settings.DJANGO_MCP, "TASK_LOOP_CONNECTIONS": 0}
    assert await read_visible(str(task.id), OWNER) is USE_STORE  # not handed out any more


async def test_a_final_write_takes_its_connection_before_its_shielded_statement_starts(settings):
    """The shield starts the statement a turn of the loop later: no read may be handed the connection meanwhile."""
    settings.DJANGO_MCP = {**settings.DJANGO_MCP, "TASK_LOOP_CONNECTIONS": 1}
    tasks = [await sync_to_async(_task)(status="working") for _ in range(2)]
    await _opened()
    link = await _the_link()
    execute, in_flight, most = link.statements.execute, 0, 0

    async def counted(*args, **kwargs):
        nonlocal in_flight, most
        in_flight += 1
        most = max(most, in_flight)
        try:
            return await execute(*args, **kwargs)
        finally:
            in_flight -= 1

    with (
        mock.patch.object(link.statements, "execute", side_effect=counted),
        mock.patch.object(PLUGIN.store, "_avisible_in_threads", side_effect=AssertionError("read in the pool")),
        mock.patch.object(PLUGIN.store, "_afinish_in_threads", side_effect=AssertionError("written in the pool")),
    ):
        finished, read = await asyncio.gather(
            PLUGIN.store.afinish(tasks[0].id, "completed"), PLUGIN.store.avisible(str(tasks[1].id), OWNER)
        )
    assert finished.status == "completed" and read is not None and read.id == tasks[1].id
    assert most == 1  # the read waited for the write's statement to end, and was handed the connection
    assert _held().in_use == 0 and await _the_link() is link


async def test_a_failing_connection_is_dropped_and_another_opened():
    task = await sync_to_async(_task)()
    await _opened()
    broken = await _the_link()
    broken.pgconn.finish()  # the server went away
    assert await read_visible(str(task.id), OWNER) is USE_STORE
    await _held().pool.wait(5)
    assert await _the_link() is not broken
    again = await read_visible(str(task.id), OWNER)
    assert isinstance(again, Task) and again.id == task.id


async def test_a_read_cancelled_mid_query_drops_the_connection():
    task = await sync_to_async(_task)()
    await _opened()
    link = await _the_link()
    with mock.patch.object(link.statements, "execute", side_effect=asyncio.CancelledError):
        with pytest.raises(asyncio.CancelledError):
            await read_visible(str(task.id), OWNER)
    assert link.closed and _held().in_use == 0
    await _held().pool.wait(5)
    assert await _the_link() is not link


async def test_every_statement_goes_through_the_connections_one_cursor():
    task = await sync_to_async(_task)(status="working")
    await _opened()
    link = await _the_link()
    with mock.patch.object(link, "cursor", side_effect=AssertionError("a cursor per statement")):
        assert isinstance(await read_visible(str(task.id), OWNER), Task)
        assert (await PLUGIN.store.afinish(task.id, "completed")).status == "completed"
        assert isinstance(await read_visible(str(task.id), OWNER), Task)


async def test_it_binds_on_the_client_and_prepares_nothing_as_django_does_by_default():
    task = await sync_to_async(_task)()
    await _opened()
    for _ in range(6):
        assert isinstance(await read_visible(str(task.id), OWNER), Task)
    async with _in_use() as link:
        assert isinstance(link.statements, psycopg.AsyncClientCursor)
        prepared = await (await link.execute("SELECT count(*) FROM pg_prepared_statements")).fetchone()
    assert prepared == (0,)


async def test_with_djangos_server_side_binding_and_prepare_threshold_the_read_is_prepared():
    # OPTIONS a project sets when no transaction-mode pooler without prepared statements sits in between.
    task = await sync_to_async(_task)()
    options = {"server_side_binding": True, "prepare_threshold": 0}
    with mock.patch.dict(connections["default"].settings_dict["OPTIONS"], options):
        await _opened()
        found = await read_visible(str(task.id), OWNER)
        async with _in_use() as link:
            assert type(link.statements) is psycopg.AsyncCursor
            prepared = await (await link.execute("SELECT statement FROM pg_prepared_statements")).fetchall()
    assert isinstance(found, Task) and found.pk == task.pk
    assert any('FROM "django_mcp_task"' in statement for (statement,) in prepared)


async def test_the_connection_is_in_autocommit_with_djangos_time_zone():
    await _opened()
    async with _in_use() as link:
        shown = await (await link.execute("SHOW TimeZone")).fetchone()
        assert link.autocommit
    assert shown == (connections["default"].timezone_name,)


async def test_a_read_in_flight_when_its_loop_shuts_down_ends_then_closes_the_connection():
    task = await sync_to_async(_task)()
    await _opened()
    link = await _the_link()
    execute, sent, answer = link.statements.execute, asyncio.Event(), asyncio.Event()

    async def slow(*args, **kwargs):
        sent.set()
        await answer.wait()
        return await execute(*args, **kwargs)

    with mock.patch.object(link.statements, "execute", side_effect=slow):
        read = asyncio.ensure_future(read_visible(str(task.id), OWNER))
        await sent.wait()  # it waits for the database
        loop_pools = loop_postgres._loops[asyncio.get_running_loop()]
        await loop_pools.aclose()  # what the closers do when the loop ends
        assert not link.closed and not loop_pools.pools
        answer.set()
        found = await read
    assert isinstance(found, Task) and found.id == task.id
    assert link.closed


def test_a_loop_ending_while_a_connection_opens_ends_and_leaves_no_task():
    """psycopg_pool's worker swallows the cancellation of its connection attempt; the loop still ends."""
    never = asyncio.Event()
    connecting = []

    async def hanging_connect(*args, **kwargs):
        connecting.append(True)
        await never.wait()  # a database that never answers

    async def main() -> loop_postgres._LoopPools:
        for _ in range(2):
            assert await read_visible(str(uuid.uuid4()), OWNER) is USE_STORE
        await until(lambda: connecting, what="the pool's worker to connect")
        return loop_postgres._loops[asyncio.get_running_loop()]

    with mock.patch("psycopg.AsyncConnection.connect", side_effect=hanging_connect):
        runner = asyncio.Runner()
        loop_pools = runner.run(main())
        (held,) = loop_pools.pools.values()
        runner.close()  # cancels what is left, waits for it (forever, without the closer), then closes
    assert held.pool.closed and not loop_pools.pools and loop_pools.loop.is_closed()
    assert loop_pools.loop not in loop_postgres._loops


async def test_a_connection_that_opens_after_its_loop_shut_down_is_closed():
    release = asyncio.Event()
    real_connect = psycopg.AsyncConnection.connect
    opened = []

    async def late_connect(*args, **kwargs):
        await release.wait()
        opened.append(await real_connect(*args, **kwargs))
        return opened[-1]

    with mock.patch("psycopg.AsyncConnection.connect", side_effect=late_connect):
        for _ in range(2):
            assert await read_visible(str(uuid.uuid4()), OWNER) is USE_STORE
        loop_pools = loop_postgres._loops[asyncio.get_running_loop()]
        (held,) = loop_pools.pools.values()
        closing = asyncio.ensure_future(loop_pools.aclose())  # the loop shuts down while it opens
        await until(lambda: held.pool.closed, what="the pool to close")
        release.set()
        await closing
        await until(lambda: opened and opened[0].closed)
    assert held.pool.closed


def test_a_loop_made_for_one_call_never_opens_a_connection():
    task = _task()

    async def one_call():
        return await read_visible(str(task.id), OWNER), asyncio.get_running_loop() in loop_postgres._loops

    for _ in range(3):  # as async_to_sync serves each request under WSGI
        assert asyncio.run(one_call()) == (USE_STORE, False)
    assert not loop_postgres._loops  # nothing left behind either


async def test_a_database_that_cannot_be_reached_is_left_to_the_store_and_the_pool_tries_again(caplog):
    with mock.patch.object(connections, "create_connection", return_value=_wrapper(PORT="1")):
        for _ in range(2):
            assert await read_visible(str(uuid.uuid4()), OWNER) is USE_STORE
        await until(lambda: _stats().get("connections_errors"))
        assert await read_visible(str(uuid.uuid4()), OWNER) is USE_STORE
        assert not _held().ready and "default" not in loop_postgres._elsewhere
    (logged, *_) = [r for r in caplog.records if r.name == "psycopg.pool"]
    assert logged.levelno == logging.WARNING and "error connecting in 'django_mcp.tasks.default'" in logged.message


async def test_a_loop_psycopg_cannot_run_on_leaves_every_read_to_the_store():
    with mock.patch.object(asyncio, "ProactorEventLoop", type(asyncio.get_running_loop()), create=True):
        for _ in range(2):
            assert await read_visible(str(uuid.uuid4()), OWNER) is USE_STORE
    assert "default" in loop_postgres._elsewhere and asyncio.get_running_loop() not in loop_postgres._loops


async def test_no_request_waits_for_the_connection_to_open():
    task = await sync_to_async(_task)()
    give_up = asyncio.Event()

    async def slow_connect(*args, **kwargs):
        await give_up.wait()  # a database that takes its time (or never answers)
        raise OSError("gave up")

    with mock.patch("psycopg.AsyncConnection.connect", side_effect=slow_connect) as connect:
        started = time.perf_counter()
        found = [await PLUGIN.store.avisible(str(task.id), OWNER) for _ in range(3)]
        assert time.perf_counter() - started < 2
        assert all(t is not None and t.id == task.id for t in found)  # through the store
        assert connect.call_count == 1  # one attempt, in the background
        give_up.set()
    assert not _held().ready


def _set_up(sender, connection, **kwargs):
    """A project's ``connection_created`` receiver (a search_path, a statement_timeout …)."""


@contextlib.contextmanager
def _receiver_if(connect: bool):
    if connect:
        connection_created.connect(_set_up)
    try:
        yield
    finally:
        connection_created.disconnect(_set_up)


async def test_a_subclass_an_assumed_role_or_a_connection_set_up_by_the_project_is_left_to_the_store():
    class Spatial(type(connections["default"])):
        pass

    databases = [Spatial(connections["default"].settings_dict, "default"), _wrapper(OPTIONS={"assume_role": "x"})]
    for database in [*databases, _wrapper()]:
        loop_postgres._elsewhere.discard("default")
        loop_postgres._read_once.clear()
        with (
            mock.patch.object(connections, "create_connection", return_value=database) as create,
            _receiver_if(database not in databases),
        ):
            for _ in range(3):
                assert await read_visible(str(uuid.uuid4()), OWNER) is USE_STORE
        assert create.call_count == 1  # decided once, not per read
        assert asyncio.get_running_loop() not in loop_postgres._loops  # nothing opened, nothing kept
        assert "default" in loop_postgres._elsewhere


async def test_a_renamed_database_gets_a_pool_of_its_own():
    task = await sync_to_async(_task)()
    first = await _opened()
    with mock.patch.dict(first.database.settings_dict, {"NAME": "no_such_database_here"}):
        with mock.patch.object(connections, "create_connection", return_value=_wrapper(NAME="no_such_database_here")):
            assert await read_visible(str(task.id), OWNER) is USE_STORE  # closes it, opens one there
            renamed = _held()
            assert renamed is not first and renamed.name == "no_such_database_here"
            await until(lambda: first.pool.closed)
            assert await read_visible(str(task.id), OWNER) is USE_STORE  # no such database: never ready
    assert await read_visible(str(task.id), OWNER) is USE_STORE  # renamed back: another pool
    await _held().pool.wait(5)
    assert isinstance(await read_visible(str(task.id), OWNER), Task)
    await until(lambda: renamed.pool.closed)


def _read_on(loop: asyncio.AbstractEventLoop, task_id: str):
    async def read():
        if asyncio.get_running_loop() not in loop_postgres._loops:
            await _opened()
        found = await read_visible(task_id, OWNER)
        return found, await _the_link()

    return loop.run_until_complete(read())


def test_the_connection_is_closed_when_its_loop_shuts_down():
    task = _task()
    with asyncio.Runner() as runner:  # as asyncio.run, uvicorn and pytest-asyncio end a loop
        found, link = _read_on(runner.get_loop(), str(task.id))
        assert isinstance(found, Task) and not link.closed
    assert link.closed and not loop_postgres._loops


# The pool's worker tasks are left pending on the closed loop: collected, they say so.
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_a_loop_closed_without_shutting_down_has_its_connection_closed_by_the_next_loop():
    task = _task()
    first = asyncio.new_event_loop()
    _, first_link = _read_on(first, str(task.id))
    first.close()  # its tasks never cancelled, its async generators never shut down
    with asyncio.Runner() as runner:
        _, second_link = _read_on(runner.get_loop(), str(task.id))
        assert first_link.closed and not second_link.closed
        assert first not in loop_postgres._loops  # forgotten, not kept alive
    assert second_link.closed and not loop_postgres._loops
    del first
    gc.collect()  # here, not in another test


def test_a_loop_that_only_shuts_down_its_async_generators_closes_its_pool():
    task = _task()
    loops = [asyncio.new_event_loop() for _ in range(2)]
    try:
        links = [_read_on(loop, str(task.id))[1] for loop in loops]
        assert links[0] is not links[1] and not any(link.closed for link in links)  # each loop its own
        assert _read_on(loops[0], str(task.id))[1] is links[0]
    finally:
        for loop in loops:
            loop.run_until_complete(loop.shutdown_asyncgens())
            assert not [t for t in asyncio.all_tasks(loop) if not t.done()]  # the closer task did not linger
            loop.close()
    assert all(link.closed for link in links) and not loop_postgres._loops


# -- a task's final compare-and-set from the loop -----------------------------------------------


async def test_finish_is_sent_from_the_loop_and_returns_what_the_store_would():
    task = await sync_to_async(_task)(status="working", arguments={"n": 1})
    await _opened()
    result = {"content": [{"type": "text", "text": "ünïcode"}], "structuredContent": {"n": [1, None]}}
    with mock.patch.object(PLUGIN.store, "_afinish_in_threads", side_effect=AssertionError("went to the pool")):
        done = await PLUGIN.store.afinish(task.id, "completed", result=result, message="Done")
        again = await PLUGIN.store.afinish(task.id, "cancelled")  # a compare-and-set: already terminal
    assert again is None
    orm = await Task.objects.aget(pk=task.id)
    assert (orm.status, orm.status_message, orm.result, orm.input_requests) == ("completed", "Done", result, {})
    assert done is not None and done._state.db == "default"
    loaded = {f.attname for f in Task._meta.concrete_fields} - done.get_deferred_fields()
    assert {name: getattr(done, name) for name in loaded} == {name: getattr(orm, name) for name in loaded}
    assert "arguments" in done.get_deferred_fields() and {"watched", "result", "updated_at"} <= loaded


async def test_finish_goes_to_the_store_while_every_connection_is_busy_or_failing(settings):
    settings.DJANGO_MCP = {**settings.DJANGO_MCP, "TASK_LOOP_CONNECTIONS": 1}
    tasks = [await sync_to_async(_task)(status="working") for _ in range(3)]
    await _opened()
    with mock.patch.object(PLUGIN.store, "_afinish_in_threads", wraps=PLUGIN.store._afinish_in_threads) as store:
        async with _in_use():  # a tasks/get of this loop is reading
            assert (await PLUGIN.store.afinish(tasks[0].id, "completed")).status == "completed"
        (await _the_link()).pgconn.finish()  # the server went away
        assert (await PLUGIN.store.afinish(tasks[1].id, "failed", error={"code": 1})).status == "failed"
    assert [call.args[0] for call in store.await_args_list] == [tasks[0].id, tasks[1].id]
    assert [t.status async for t in Task.objects.filter(pk__in=[t.id for t in tasks[:2]]).order_by("status")] == [
        "completed",
        "failed",
    ]
    assert (await Task.objects.aget(pk=tasks[2].id)).status == "working"


async def test_a_task_run_here_is_finished_from_the_loop():
    """The runner's final write takes the loop's connection when it is free (no thread, no pool checkout)."""
    from django.test import AsyncClient

    from tests.task_calls import create

    await _opened()
    with mock.patch.object(PLUGIN.store, "_afinish_in_threads", side_effect=AssertionError("went to the pool")):
        task_id = (await create(AsyncClient(), "quick", {"text": "loop"}))["taskId"]
        supervisor = PLUGIN.runner._supervisors.get(task_id)
        if supervisor is not None:  # (no tasks/get meanwhile: it would hold the connection)
            await asyncio.wait_for(asyncio.shield(supervisor), 5)
    done = await Task.objects.aget(pk=task_id)
    assert done.status == "completed" and done.result["content"][0]["text"] == "task:loop"


async def test_a_connection_idle_too_long_is_replaced_before_its_next_use():
    """The network may have dropped it silently: a statement on it could wait for the kernel to give up."""
    task = await sync_to_async(_task)()
    await _opened()
    link = await _the_link()
    link.returned_at -= loop_postgres.IDLE_SECONDS + 1
    assert await read_visible(str(task.id), OWNER) is USE_STORE  # to the store meanwhile
    assert link.closed and _held().in_use == 0
    await _held().pool.wait(5)
    assert await _the_link() is not link
    fresh = await read_visible(str(task.id), OWNER)
    assert isinstance(fresh, Task) and fresh.id == task.id


async def test_the_pool_closes_what_a_burst_left_idle():
    """psycopg_pool shrinks a pool back towards one connection when connections stay unused that long."""
    assert (await _opened()).pool.max_idle == loop_postgres.IDLE_SECONDS and _held().pool.min_size == 1


async def test_a_statement_the_server_refuses_leaves_the_connection_in_the_pool():
    await _opened()
    link = await _the_link()
    taken = await loop_postgres._atake("default")
    assert taken is not None and taken[1] is link
    assert await loop_postgres._aexecute(*taken, "SELECT 1 / %s", (0,)) is USE_STORE  # division by zero
    assert not link.closed and _held().in_use == 0
    taken = await loop_postgres._atake("default")
    assert taken is not None and taken[1] is link
    assert await loop_postgres._aexecute(*taken, "SELECT %s::int + 1", (1,)) == (2,)


async def test_a_finish_cancelled_mid_statement_still_ends_the_task():
    """As in a store thread, the statement runs to its end; only its caller stops waiting."""
    task = await sync_to_async(_task)(status="working")
    await _opened()
    started, release = asyncio.Event(), asyncio.Event()
    real = loop_postgres._aexecute

    async def held(*args):
        started.set()
        await release.wait()
        return await real(*args)

    with mock.patch.object(loop_postgres, "_aexecute", held):
        finishing = asyncio.ensure_future(PLUGIN.store.afinish(task.id, "completed", result={"content": []}))
        await started.wait()
        finishing.cancel()
        with pytest.raises(asyncio.CancelledError):
            await finishing
        release.set()
        await until(lambda: _held().in_use == 0)
    assert (await Task.objects.aget(pk=task.id)).status == "completed"
