"""``tasks/get``'s read from the event loop on PostgreSQL: what it reads, its hand-overs, its connection's life."""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
import uuid
from datetime import timedelta
from unittest import mock

import psycopg
import pytest
from asgiref.sync import sync_to_async
from django.core.exceptions import FieldDoesNotExist
from django.db import connections
from django.db.backends.signals import connection_created
from django.utils import timezone

from django_mcp.models import Task
from django_mcp.server.notify import throttle
from django_mcp.tasks.plugin import _GET_FIELDS as GET_FIELDS
from django_mcp.tasks.store import loop_postgres, operations
from django_mcp.tasks.store.loop_postgres import aread_visible as read_visible
from django_mcp.tasks.store.prepared import USE_STORE
from django_mcp.tasks.wire import detailed_task
from tests.task_rows import OWNER
from tests.task_rows import make_task as _task
from tests.task_rows import task_fields as _fields
from tests.task_servers import tasks_server

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(os.environ.get("DJANGO_MCP_DATABASE") != "postgres", reason="PostgreSQL's read path"),
]

PLUGIN = tasks_server.extension_plugins[0]


@pytest.fixture(autouse=True)
def _fresh_readers(settings):
    settings.DJANGO_MCP = {**settings.DJANGO_MCP, "TASK_FAST_PATHS": True}  # what this module tests
    # Long enough that a hand-over the tests expect never times out on a slow machine (they patch it down
    # to see the time-out), and that a wait that should not happen would show.
    with mock.patch.object(loop_postgres, "WAIT_SECONDS", 5.0):
        yield
    for loop_readers in list(loop_postgres._loops.values()):
        loop_readers.close()
    loop_postgres._loops.clear()
    loop_postgres._elsewhere.discard("default")


def _loop_readers() -> loop_postgres._LoopReaders:
    return loop_postgres._loops[asyncio.get_running_loop()]


def _reader() -> loop_postgres._Reader:
    (reader,) = _loop_readers().readers["default"]  # one: a second opens only while the first is busy
    return reader


async def _opened() -> loop_postgres._Reader:
    """The loop's reader, once its second read (the store answers both) has opened it in the background."""
    for _ in range(2):
        assert await read_visible(str(uuid.uuid4()), OWNER) is USE_STORE
    await asyncio.gather(*_loop_readers().opening)
    return _reader()


async def _two_opened(task: Task) -> tuple[loop_postgres._Reader, loop_postgres._Reader]:
    """The loop's first connection, and the second a read opened while the first was in use."""
    first = await _opened()
    first.busy = True
    try:
        assert isinstance(await read_visible(str(task.id), OWNER), Task)  # opens a second, and is handed it
    finally:
        first.busy = False
    return first, _loop_readers().readers["default"][1]


@contextlib.contextmanager
def _receiver_if(connect: bool):
    if connect:
        connection_created.connect(_set_up)
    try:
        yield
    finally:
        connection_created.disconnect(_set_up)


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


async def test_reads_that_find_every_connection_in_use_are_handed_it_in_turn(settings):
    settings.DJANGO_MCP = {**settings.DJANGO_MCP, "TASK_LOOP_CONNECTIONS": 1}
    tasks = [await sync_to_async(_task)(status_message=str(n)) for n in range(3)]
    reader = await _opened()
    with mock.patch.object(PLUGIN.store, "_avisible_in_threads", side_effect=AssertionError("went to the pool")):
        found = await asyncio.gather(*(PLUGIN.store.avisible(str(t.id), OWNER) for t in tasks))
    assert [t.status_message for t in found] == ["0", "1", "2"]
    assert _reader() is reader and not reader.busy and not _loop_readers().waiting["default"]


async def test_a_read_waits_for_a_connection_in_use_no_longer_than_wait_seconds(settings):
    settings.DJANGO_MCP = {**settings.DJANGO_MCP, "TASK_LOOP_CONNECTIONS": 1}
    task = await sync_to_async(_task)()
    reader = await _opened()
    reader.busy = True  # a statement stuck on a dropped network
    try:
        with mock.patch.object(loop_postgres, "WAIT_SECONDS", 0.01):
            assert await read_visible(str(task.id), OWNER) is USE_STORE
            assert (await PLUGIN.store.avisible(str(task.id), OWNER)).id == task.id  # the store's threads answer
    finally:
        reader.busy = False
    assert not _loop_readers().waiting["default"] and len(_loop_readers().readers["default"]) == 1


async def test_a_read_with_a_misspelt_field_leaves_the_connection_it_was_handed_free(settings):
    settings.DJANGO_MCP = {**settings.DJANGO_MCP, "TASK_LOOP_CONNECTIONS": 1}
    task = await sync_to_async(_task)()
    reader = await _opened()
    reader.busy = True
    misspelt = asyncio.ensure_future(read_visible(str(task.id), OWNER, ("stauts",)))
    while not _loop_readers().waiting.get("default"):
        await asyncio.sleep(0)
    _loop_readers().release("default", reader)  # handed to the misspelt read
    with pytest.raises(FieldDoesNotExist):
        await misspelt
    assert not reader.busy and isinstance(await read_visible(str(task.id), OWNER), Task)


async def test_a_read_cancelled_once_handed_a_connection_passes_it_on(settings):
    settings.DJANGO_MCP = {**settings.DJANGO_MCP, "TASK_LOOP_CONNECTIONS": 1}
    task = await sync_to_async(_task)()
    reader = await _opened()
    reader.busy = True
    first, second = (asyncio.ensure_future(read_visible(str(task.id), OWNER)) for _ in range(2))
    while len(_loop_readers().waiting.get("default", ())) < 2:
        await asyncio.sleep(0)
    _loop_readers().release("default", reader)  # the statement in flight ends: handed to the first
    first.cancel()  # before the first has run again
    with pytest.raises(asyncio.CancelledError):
        await first
    assert isinstance(await second, Task) and (await second).id == task.id
    assert not reader.busy and not reader.link.closed
    reader.busy = True
    waiting = asyncio.ensure_future(read_visible(str(task.id), OWNER))
    while not _loop_readers().waiting.get("default"):
        await asyncio.sleep(0)
    _loop_readers().release("default", reader)
    waiting.cancel()  # handed over, then cancelled, with nobody else waiting: free again
    with pytest.raises(asyncio.CancelledError):
        await waiting
    assert not reader.busy and isinstance(await read_visible(str(task.id), OWNER), Task)


async def test_while_every_connection_is_in_use_another_opens_up_to_the_setting(settings):
    settings.DJANGO_MCP = {**settings.DJANGO_MCP, "TASK_LOOP_CONNECTIONS": 3}
    task = await sync_to_async(_task)()
    readers = [await _opened()]
    try:
        for _ in range(2):
            readers[-1].busy = True  # a request of this loop is reading on each one so far
            with mock.patch.object(PLUGIN.store, "_avisible_in_threads", side_effect=AssertionError("to the pool")):
                # Both wait: one more connection opens (one at a time), is handed to the first, then the second.
                found = await asyncio.gather(*(PLUGIN.store.avisible(str(task.id), OWNER) for _ in range(2)))
            assert all(t.id == task.id for t in found) and not _loop_readers().opening
            readers.append(_loop_readers().readers["default"][-1])
            assert len(_loop_readers().readers["default"]) == len(readers) and not readers[-1].busy
        assert len({id(reader.link) for reader in readers}) == 3
        readers[-1].busy = True
        with mock.patch.object(loop_postgres, "WAIT_SECONDS", 0.01):
            assert await read_visible(str(task.id), OWNER) is USE_STORE  # all in use, and three is the most
        assert not _loop_readers().opening and len(_loop_readers().readers["default"]) == 3
    finally:
        for reader in readers:
            reader.busy = False
    assert isinstance(await read_visible(str(task.id), OWNER), Task)


async def test_no_loop_connection_with_the_setting_at_zero(settings):
    settings.DJANGO_MCP = {**settings.DJANGO_MCP, "TASK_LOOP_CONNECTIONS": 0}
    task = await sync_to_async(_task)()
    for _ in range(3):
        assert await read_visible(str(task.id), OWNER) is USE_STORE
    assert await PLUGIN.store.avisible(str(task.id), OWNER) is not None  # the store answers
    assert not loop_postgres._loops.get(asyncio.get_running_loop(), loop_postgres._LoopReaders()).readers


async def test_lowering_the_setting_closes_the_connections_beyond_it(settings):
    task = await sync_to_async(_task)()
    first, second = await _two_opened(task)
    settings.DJANGO_MCP = {**settings.DJANGO_MCP, "TASK_LOOP_CONNECTIONS": 1}
    assert isinstance(await read_visible(str(task.id), OWNER), Task)  # on the first
    assert second.link.closed and _reader() is first
    settings.DJANGO_MCP = {**settings.DJANGO_MCP, "TASK_LOOP_CONNECTIONS": 0}
    assert await read_visible(str(task.id), OWNER) is USE_STORE  # not handed out any more
    assert not first.link.closed  # (closed with its loop, or once it has been idle too long)


async def test_a_final_write_takes_its_connection_before_its_shielded_statement_starts(settings):
    """The shield starts the statement a turn of the loop later: no read may be handed the connection meanwhile."""
    settings.DJANGO_MCP = {**settings.DJANGO_MCP, "TASK_LOOP_CONNECTIONS": 1}
    tasks = [await sync_to_async(_task)(status="working") for _ in range(2)]
    reader = await _opened()
    execute, in_flight, most = reader.cursor.execute, 0, 0

    async def counted(*args, **kwargs):
        nonlocal in_flight, most
        in_flight += 1
        most = max(most, in_flight)
        try:
            return await execute(*args, **kwargs)
        finally:
            in_flight -= 1

    with (
        mock.patch.object(reader.cursor, "execute", side_effect=counted),
        mock.patch.object(PLUGIN.store, "_avisible_in_threads", side_effect=AssertionError("read in the pool")),
        mock.patch.object(PLUGIN.store, "_afinish_in_threads", side_effect=AssertionError("written in the pool")),
    ):
        finished, read = await asyncio.gather(
            PLUGIN.store.afinish(tasks[0].id, "completed"), PLUGIN.store.avisible(str(tasks[1].id), OWNER)
        )
    assert finished.status == "completed" and read is not None and read.id == tasks[1].id
    assert most == 1  # the read waited for the write's statement to end, and was handed the connection
    assert _loop_readers().readers["default"] == [reader] and not reader.busy


async def test_a_failing_connection_is_dropped_and_opened_again():
    task = await sync_to_async(_task)()
    broken = (await _opened()).link
    broken.pgconn.finish()  # the server went away
    assert await read_visible(str(task.id), OWNER) is USE_STORE
    assert "default" not in _loop_readers().readers
    assert (await _opened()).link is not broken
    again = await read_visible(str(task.id), OWNER)
    assert isinstance(again, Task) and again.id == task.id and not _reader().link.closed


async def test_a_read_cancelled_mid_query_drops_the_connection():
    task = await sync_to_async(_task)()
    reader = await _opened()
    link = reader.link
    with mock.patch.object(reader.cursor, "execute", side_effect=asyncio.CancelledError):
        with pytest.raises(asyncio.CancelledError):
            await read_visible(str(task.id), OWNER)
    assert link.closed and "default" not in _loop_readers().readers


async def test_every_statement_goes_through_the_connections_one_cursor():
    task = await sync_to_async(_task)(status="working")
    reader = await _opened()
    with mock.patch.object(reader.link, "cursor", side_effect=AssertionError("a cursor per statement")):
        assert isinstance(await read_visible(str(task.id), OWNER), Task)
        assert (await PLUGIN.store.afinish(task.id, "completed")).status == "completed"
        assert isinstance(await read_visible(str(task.id), OWNER), Task)


async def test_the_connection_has_djangos_time_zone():
    link = (await _opened()).link
    shown = await (await link.execute("SHOW TimeZone")).fetchone()
    assert shown == (connections["default"].timezone_name,)


async def test_a_read_in_flight_when_its_loop_shuts_down_ends_then_closes_the_connection():
    task = await sync_to_async(_task)()
    reader = await _opened()
    read = asyncio.ensure_future(read_visible(str(task.id), OWNER))
    while not reader.busy:  # until it waits for the database
        await asyncio.sleep(0)
    _loop_readers().close()  # what the closer does at loop.shutdown_asyncgens()
    assert not reader.link.closed and "default" not in _loop_readers().readers
    found = await read
    assert isinstance(found, Task) and found.id == task.id
    assert reader.link.closed


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
        _loop_readers().close()  # the loop shuts down while it opens
        release.set()
        await asyncio.gather(*_loop_readers().opening)
    assert opened and opened[0].closed and not _loop_readers().readers


async def test_an_open_cancelled_with_its_loop_forgets_its_reader():
    never = asyncio.Event()

    async def hanging_connect(*args, **kwargs):
        await never.wait()

    with mock.patch("psycopg.AsyncConnection.connect", side_effect=hanging_connect):
        for _ in range(2):
            assert await read_visible(str(uuid.uuid4()), OWNER) is USE_STORE
        (opening,) = _loop_readers().opening
        await asyncio.sleep(0)  # it is connecting
        assert _reader().busy
        opening.cancel()  # as asyncio.run cancels what is left when its loop ends
        with pytest.raises(asyncio.CancelledError):
            await opening
    assert not _loop_readers().readers and "default" not in loop_postgres._elsewhere


async def test_an_open_cancelled_mid_handshake_closes_its_socket_while_its_task_is_kept():
    """A cancelled open leaves no socket behind, though its task keeps the exception until someone retrieves it."""
    from django.db.backends.postgresql.base import DatabaseWrapper as PostgresDatabase

    greeted: asyncio.Queue[asyncio.StreamReader] = asyncio.Queue()
    writers: list[asyncio.StreamWriter] = []

    async def silent(stream: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writers.append(writer)
        await stream.read(1)  # the client's first packet (SSL or startup request): never answered
        greeted.put_nowait(stream)

    server = await asyncio.start_server(silent, "127.0.0.1", 0)
    real = PostgresDatabase.get_connection_params

    def to_the_silent_server(database: PostgresDatabase) -> dict:
        return {**real(database), "host": "127.0.0.1", "port": server.sockets[0].getsockname()[1]}

    try:
        with mock.patch.object(PostgresDatabase, "get_connection_params", to_the_silent_server):
            for _ in range(2):
                assert await read_visible(str(uuid.uuid4()), OWNER) is USE_STORE
            (opening,) = _loop_readers().opening
            stream = await asyncio.wait_for(greeted.get(), 5)  # psycopg now waits for the answer
            opening.cancel()
            await asyncio.wait([opening])  # not awaited itself: that would take its exception away
        assert opening.cancelled() and not _loop_readers().readers
        # The client's end is closed, with the task and its exception still here: the server reads to the end.
        await asyncio.wait_for(stream.read(), 5)  # a time-out while it is still open
        assert stream.at_eof()
    finally:
        loop_readers = loop_postgres._loops.get(asyncio.get_running_loop())
        for left in loop_readers.opening if loop_readers else ():  # after a failure: not left connecting
            left.cancel()
        for writer in writers:
            writer.close()  # the server's end (3.12's Server.wait_closed waits for it)
        server.close()
        await server.wait_closed()


def test_a_loop_made_for_one_call_never_opens_a_connection():
    task = _task()

    async def one_call():
        found = await read_visible(str(task.id), OWNER)
        return found, {**_loop_readers().readers}, {*_loop_readers().opening}

    for _ in range(3):  # as async_to_sync serves each request under WSGI
        assert asyncio.run(one_call()) == (USE_STORE, {}, set())
    assert not loop_postgres._loops  # nothing left behind either


async def test_a_database_that_cannot_be_reached_is_left_to_the_store_and_tried_again_a_second_later(caplog):
    throttle.reset()
    with mock.patch.object(connections, "create_connection", return_value=_wrapper(PORT="1")) as create:
        for _ in range(2):
            assert await read_visible(str(uuid.uuid4()), OWNER) is USE_STORE
        await asyncio.gather(*_loop_readers().opening)
        assert not _loop_readers().readers  # refused: forgotten
        (logged,) = [r for r in caplog.records if r.name == "django_mcp.tasks"]
        assert (
            logged.levelname == "WARNING" and "Could not open an event loop connection to 'default'" in logged.message
        )
        assert await read_visible(str(uuid.uuid4()), OWNER) is USE_STORE
        assert create.call_count == 2  # not tried again at once
        _loop_readers().retry_at["default"] -= loop_postgres.RETRY_SECONDS
        assert await read_visible(str(uuid.uuid4()), OWNER) is USE_STORE
        await asyncio.gather(*_loop_readers().opening)
        assert create.call_count == 3  # tried again, not remembered as another backend
        wait = _loop_readers().retry_at["default"] - time.monotonic()
        assert loop_postgres.RETRY_SECONDS < wait <= 2 * loop_postgres.RETRY_SECONDS  # twice as long
    assert "default" not in loop_postgres._elsewhere
    assert len([r for r in caplog.records if r.name == "django_mcp.tasks"]) == 1  # the repeat is held back
    _loop_readers().retry_at.clear()
    await _opened()
    assert "Event loop connection to 'default' opened (after 2 failure(s))" in caplog.records[-1].message


async def test_a_loop_psycopg_cannot_run_on_leaves_every_read_to_the_store():
    refused = psycopg.InterfaceError("Psycopg cannot use the 'ProactorEventLoop' to run in async mode")
    with mock.patch("psycopg.AsyncConnection.connect", side_effect=refused):
        for _ in range(2):
            assert await read_visible(str(uuid.uuid4()), OWNER) is USE_STORE
        await asyncio.gather(*_loop_readers().opening)
    assert "default" in loop_postgres._elsewhere and not _loop_readers().readers


async def test_no_request_waits_for_the_connection_to_open():
    task = await sync_to_async(_task)()
    give_up = asyncio.Event()

    async def slow_connect(*args, **kwargs):
        await give_up.wait()  # a database that takes its time (or never answers)
        raise OSError("gave up")

    with mock.patch("psycopg.AsyncConnection.connect", side_effect=slow_connect):
        started = time.perf_counter()
        found = [await PLUGIN.store.avisible(str(task.id), OWNER) for _ in range(3)]
        assert time.perf_counter() - started < 2
        assert all(t is not None and t.id == task.id for t in found)  # through the store
        assert len(_loop_readers().opening) == 1  # one attempt, in the background
        give_up.set()
        await asyncio.gather(*_loop_readers().opening)
    assert not _loop_readers().readers


def _set_up(sender, connection, **kwargs):
    """A project's ``connection_created`` receiver (a search_path, a statement_timeout …)."""


async def test_a_subclass_an_assumed_role_or_a_connection_set_up_by_the_project_is_left_to_the_store():
    class Spatial(type(connections["default"])):
        pass

    databases = [Spatial(connections["default"].settings_dict, "default"), _wrapper(OPTIONS={"assume_role": "x"})]
    for database in [*databases, _wrapper()]:
        loop_postgres._elsewhere.discard("default")
        with (
            mock.patch.object(connections, "create_connection", return_value=database) as create,
            _receiver_if(database not in databases),
        ):
            assert await read_visible(str(uuid.uuid4()), OWNER) is USE_STORE
            assert await read_visible(str(uuid.uuid4()), OWNER) is USE_STORE
        assert create.call_count == 1  # decided once, not per read
        assert asyncio.get_running_loop() not in loop_postgres._loops  # nothing opened, nothing kept
        assert "default" in loop_postgres._elsewhere


async def test_a_renamed_database_gets_a_connection_of_its_own():
    task = await sync_to_async(_task)()
    reader = await _opened()
    first = reader.link
    with mock.patch.dict(reader.database.settings_dict, {"NAME": "no_such_database_here"}):
        with mock.patch.object(connections, "create_connection", return_value=_wrapper(NAME="no_such_database_here")):
            assert await read_visible(str(task.id), OWNER) is USE_STORE  # closes it, opens one there
            assert first.closed and [reader.link for reader in _loop_readers().readers["default"]] == [None]
            await asyncio.gather(*_loop_readers().opening)  # no such database: refused
    assert not _loop_readers().readers
    _loop_readers().retry_at.clear()
    assert (await _opened()).link is not first
    assert isinstance(await read_visible(str(task.id), OWNER), Task)


def _read_on(loop: asyncio.AbstractEventLoop, task_id: str):
    async def read():
        if asyncio.get_running_loop() not in loop_postgres._loops:
            await _opened()
        found = await read_visible(task_id, OWNER)
        return found, _reader().link

    return loop.run_until_complete(read())


def test_the_connection_is_closed_when_its_loop_shuts_down():
    task = _task()
    with asyncio.Runner() as runner:  # as asyncio.run, uvicorn and pytest-asyncio end a loop
        found, link = _read_on(runner.get_loop(), str(task.id))
        assert isinstance(found, Task) and not link.closed
    assert link.closed


def test_a_loop_closed_without_shutting_down_has_its_connection_closed_by_the_next_loop():
    task = _task()
    first = asyncio.new_event_loop()
    _, first_link = _read_on(first, str(task.id))
    first.close()  # its async generators never shut down
    with asyncio.Runner() as runner:
        _, second_link = _read_on(runner.get_loop(), str(task.id))
        assert first_link.closed and not second_link.closed
        assert first not in loop_postgres._loops  # forgotten, not kept alive
    assert second_link.closed and not loop_postgres._loops


def test_each_loop_reads_on_its_own_connection():
    task = _task()
    loops = [asyncio.new_event_loop() for _ in range(2)]
    try:
        links = [_read_on(loop, str(task.id))[1] for loop in loops]
        assert links[0] is not links[1] and not any(link.closed for link in links)
        assert _read_on(loops[0], str(task.id))[1] is links[0]
    finally:
        for loop in loops:
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()
    assert all(link.closed for link in links)


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


async def test_finish_goes_to_the_pool_while_the_connection_is_busy_or_failing():
    tasks = [await sync_to_async(_task)(status="working") for _ in range(3)]
    reader = await _opened()
    with (
        mock.patch.object(PLUGIN.store, "_afinish_in_threads", wraps=PLUGIN.store._afinish_in_threads) as pool,
        mock.patch.object(loop_postgres, "_ahanded_over", side_effect=AssertionError("a final write waited")),
    ):
        reader.busy = True  # a tasks/get of this loop is reading
        try:
            assert (await PLUGIN.store.afinish(tasks[0].id, "completed")).status == "completed"
        finally:
            reader.busy = False
        reader.link.pgconn.finish()  # the server went away
        assert (await PLUGIN.store.afinish(tasks[1].id, "failed", error={"code": 1})).status == "failed"
        assert reader not in _loop_readers().readers.get("default", [])  # dropped; a later use opens another
    assert [call.args[0] for call in pool.await_args_list] == [tasks[0].id, tasks[1].id]
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
    reader = await _opened()
    reader.used_at -= loop_postgres.IDLE_SECONDS + 1
    assert await read_visible(str(task.id), OWNER) is USE_STORE  # to the store meanwhile
    assert reader.link.closed and reader not in _loop_readers().readers.get("default", [])
    assert (await _opened()).link is not reader.link
    fresh = await read_visible(str(task.id), OWNER)
    assert isinstance(fresh, Task) and fresh.id == task.id


async def test_a_connection_a_burst_left_idle_is_closed():
    task = await sync_to_async(_task)()
    first, second = await _two_opened(task)
    first_link = first.link
    second.used_at -= loop_postgres.IDLE_SECONDS + 1  # the first served every read since
    assert isinstance(await read_visible(str(task.id), OWNER), Task)  # on the first
    assert second.link.closed and _reader() is first and not first_link.closed


async def test_a_statement_the_server_refuses_leaves_the_connection_in_use():
    reader = await _opened()
    taken = await loop_postgres._atake("default")
    assert taken is not None
    assert await loop_postgres._aexecute(*taken, "SELECT 1 / %s", (0,)) is USE_STORE  # division by zero
    assert _reader() is reader and not reader.link.closed and not reader.busy
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
        for _ in range(200):
            if (await Task.objects.aget(pk=task.id)).status == "completed":
                break
            await asyncio.sleep(0.01)
    assert (await Task.objects.aget(pk=task.id)).status == "completed"
