"""``tasks/get``'s read on the event loop's thread (SQLite): what it reads, and each way it hands over to the store.

PostgreSQL's read from the loop: ``test_tasks_loop_read_pg``.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import threading
import time
import uuid
from datetime import timedelta
from unittest import mock

import pytest
from asgiref.sync import sync_to_async
from django.core.exceptions import FieldDoesNotExist
from django.db import connections
from django.db.backends.sqlite3.base import DatabaseWrapper as SQLiteDatabase
from django.utils import timezone

from django_mcp.models import Task
from django_mcp.tasks.plugin import _GET_FIELDS as GET_FIELDS
from django_mcp.tasks.store import loop_postgres, loop_sqlite, operations
from django_mcp.tasks.store.loop_sqlite import read_visible
from django_mcp.tasks.store.prepared import USE_STORE
from django_mcp.tasks.wire import DETAILED_FIELDS, detailed_task
from tests.task_calls import get, owner_key
from tests.task_rows import OWNER, make_task, task_fields
from tests.task_servers import tasks_server

pytestmark = pytest.mark.django_db(transaction=True)
on_sqlite = pytest.mark.skipif(os.environ.get("DJANGO_MCP_DATABASE", "sqlite") != "sqlite", reason="SQLite's read path")

PLUGIN = tasks_server.extension_plugins[0]


@pytest.fixture(autouse=True)
def _fresh_reader(settings):
    settings.DJANGO_MCP = {**settings.DJANGO_MCP, "TASK_FAST_PATHS": True}  # what this module tests
    loop_sqlite._drop("default")
    yield
    loop_sqlite._drop("default")
    loop_sqlite._elsewhere.discard("default")


def _reader_on(path: str, **options):
    """Point the loop's reader at another SQLite file (its wrapper as Django would make it)."""
    settings = {**connections["default"].settings_dict, "NAME": path, "OPTIONS": options}
    return mock.patch.object(connections, "create_connection", return_value=SQLiteDatabase(settings, "default"))


@on_sqlite
def test_reads_the_task_as_the_store_does():
    task = make_task(
        status="completed",
        status_message="Done",
        result={"content": [{"type": "text", "text": "ünïcode"}]},
        input_requests={},
        arguments={"n": 1.5},
        request_meta={"progressToken": 7},
    )
    read = read_visible(str(task.id), OWNER)
    assert isinstance(read, Task)
    assert (
        task_fields(read)
        == task_fields(operations.visible(task.id, OWNER))
        == task_fields(Task.objects.get(pk=task.id))
    )
    assert read._state.db == "default" and not read._state.adding


PAYLOADS = {
    "working": {},
    "input_required": {"input_requests": {"q": {"method": "elicitation/create", "params": {"message": "?"}}}},
    "completed": {"result": {"content": [{"type": "text", "text": "ok"}]}},
    "failed": {"error": {"code": -32603, "message": "boom"}},
    "cancelled": {},
}


@pytest.mark.parametrize("status", PAYLOADS)
def test_a_task_loaded_with_only_the_detailed_fields_answers_tasks_get_without_a_query(
    status, django_assert_num_queries
):
    task = make_task(status=status, status_message="now", arguments={"big": "x" * 1000}, **PAYLOADS[status])
    narrow = Task.objects.only(*DETAILED_FIELDS).get(pk=task.id)
    with django_assert_num_queries(0):  # a field detailed_task reads beyond DETAILED_FIELDS would be a query
        assert detailed_task(narrow) == detailed_task(task)


def test_tasks_get_loads_only_what_it_answers_and_checks():
    task = make_task(status="completed", result={"content": []}, arguments={"big": "x" * 1000}, request_meta={"a": 1})
    reads = [operations.visible(str(task.id), OWNER, GET_FIELDS)]
    if connections["default"].vendor == "sqlite":
        reads.append(read_visible(str(task.id), OWNER, GET_FIELDS))
    for read in reads:
        assert isinstance(read, Task)
        assert {"arguments", "request_meta", "input_responses", "tool"} <= read.get_deferred_fields()
        assert not read.get_deferred_fields() & {*GET_FIELDS, "id", "expires_at"}
        assert detailed_task(read) == detailed_task(task)
        assert read.arguments == {"big": "x" * 1000}  # what is left out still loads, as QuerySet.only's would


async def test_tasks_get_asks_the_store_for_its_fields_only(async_client):
    owner = owner_key("mcp_tasks", "nobody")
    task = await sync_to_async(make_task)(owner=owner, status_message="narrow")
    with mock.patch.object(PLUGIN.store, "avisible", wraps=PLUGIN.store.avisible) as visible:
        result = (await get(async_client, str(task.id)))["result"]
    assert (result["status"], result["statusMessage"]) == ("working", "narrow")
    visible.assert_awaited_once_with(str(task.id), owner, GET_FIELDS)


def test_every_narrow_read_loads_the_expiry_it_checks(django_assert_num_queries):
    task = make_task(status_message="x")
    with django_assert_num_queries(1):  # the read itself; a deferred expiry would be a second query
        read = operations.visible(str(task.id), OWNER, ("status",))
    assert read is not None and read.expires_at == task.expires_at
    if connections["default"].vendor == "sqlite":
        with django_assert_num_queries(0):  # on its own connection; a deferred expiry would be a Django query
            read = read_visible(str(task.id), OWNER, ("status",))
        assert isinstance(read, Task) and read.expires_at == task.expires_at


def test_a_misspelt_field_is_refused_not_loaded_deferred():
    task = make_task()
    with pytest.raises(FieldDoesNotExist):
        operations.visible(str(task.id), OWNER, ("status", "staus"))


@on_sqlite
def test_another_owner_an_unknown_id_and_a_malformed_one_read_nothing():
    task = make_task()
    assert read_visible(str(task.id), "sha256:" + "b" * 64) is None
    assert read_visible(str(uuid.uuid4()), OWNER) is None
    assert read_visible("not-a-uuid", OWNER) is None


@on_sqlite
def test_the_read_connection_refuses_writes():
    task = make_task()
    assert isinstance(read_visible(str(task.id), OWNER), Task)
    link = loop_sqlite._readers["default"].link
    with pytest.raises(sqlite3.OperationalError, match="readonly"):
        link.execute(f"DELETE FROM {Task._meta.db_table}")
    assert Task.objects.filter(pk=task.id).exists()


@on_sqlite
async def test_an_expired_task_goes_to_the_store_which_deletes_it():
    task = await sync_to_async(make_task)(expires_at=timezone.now() - timedelta(seconds=1))
    assert read_visible(str(task.id), OWNER) is USE_STORE
    assert await PLUGIN.store.avisible(str(task.id), OWNER) is None
    assert not await Task.objects.filter(pk=task.id).aexists()


@on_sqlite
async def test_tasks_visible_reads_on_the_loop_without_the_store_threads():
    task = await sync_to_async(make_task)()
    with mock.patch.object(PLUGIN.store, "_avisible_in_threads", side_effect=AssertionError("went to the pool")):
        found = await PLUGIN.store.avisible(str(task.id), OWNER)
    assert found is not None and found.id == task.id


async def test_what_the_loop_cannot_read_the_store_reads():
    task = await sync_to_async(make_task)(status_message="via the pool")
    with (
        mock.patch.object(loop_sqlite, "read_visible", return_value=USE_STORE) as sqlite_loop,
        mock.patch.object(loop_postgres, "aread_visible", return_value=USE_STORE) as pg_loop,
    ):
        found = await PLUGIN.store.avisible(str(task.id), OWNER)
    sqlite_loop.assert_called_once_with(str(task.id), OWNER, None)
    pg_loop.assert_awaited_once_with(str(task.id), OWNER, None)
    assert found is not None and found.status_message == "via the pool"


def test_another_database_or_a_subclass_of_the_backend_is_left_to_the_store():
    task = make_task()

    class Encrypted(SQLiteDatabase):
        pass

    if connections["default"].vendor == "sqlite":
        subclass = Encrypted(connections["default"].settings_dict, "default")
        with mock.patch.object(connections, "create_connection", return_value=subclass) as create:
            assert read_visible(str(task.id), OWNER) is USE_STORE
            assert read_visible(str(task.id), OWNER) is USE_STORE
        assert create.call_count == 1  # decided once, not per read
    else:
        with mock.patch.object(loop_sqlite.sqlite3, "connect", side_effect=AssertionError("opened SQLite")):
            assert read_visible(str(task.id), OWNER) is USE_STORE
            assert read_visible(str(task.id), OWNER) is USE_STORE
    assert "default" in loop_sqlite._elsewhere


@on_sqlite
def test_one_connection_serves_every_thread_and_a_busy_one_is_not_waited_for():
    task = make_task()
    assert isinstance(read_visible(str(task.id), OWNER), Task)
    first = loop_sqlite._readers["default"].link
    seen = []
    reader = threading.Thread(target=lambda: seen.append(read_visible(str(task.id), OWNER)))
    reader.start()
    reader.join()
    assert isinstance(seen[0], Task) and loop_sqlite._readers["default"].link is first  # async_to_sync's threads
    with loop_sqlite._lock:  # another thread's loop is reading
        started = time.perf_counter()
        assert read_visible(str(task.id), OWNER) is USE_STORE
        assert time.perf_counter() - started < 1


@on_sqlite
def test_a_locked_database_is_left_to_the_store_at_once_and_the_connection_kept(tmp_path):
    path = str(tmp_path / "locked.sqlite3")
    writer = sqlite3.connect(path, isolation_level=None)  # rollback journal: a writer locks readers out
    writer.execute("BEGIN EXCLUSIVE")
    try:
        with _reader_on(path):
            started = time.perf_counter()
            assert read_visible(str(uuid.uuid4()), OWNER) is USE_STORE
            assert time.perf_counter() - started < 1  # no busy wait on the event loop (Django's is 5 s)
            kept = loop_sqlite._readers["default"].link
            assert read_visible(str(uuid.uuid4()), OWNER) is USE_STORE
            assert loop_sqlite._readers["default"].link is kept
    finally:
        writer.execute("ROLLBACK")
        writer.close()


@on_sqlite
def test_a_failing_connection_is_dropped_and_opened_again():
    task = make_task()
    assert isinstance(read_visible(str(task.id), OWNER), Task)
    broken = loop_sqlite._readers["default"].link
    broken.close()  # any error but "busy" or "locked"
    assert read_visible(str(task.id), OWNER) is USE_STORE
    assert "default" not in loop_sqlite._readers
    again = read_visible(str(task.id), OWNER)
    assert isinstance(again, Task) and again.id == task.id
    assert loop_sqlite._readers["default"].link is not broken


@on_sqlite
def test_a_database_that_cannot_be_opened_is_left_to_the_store(tmp_path):
    with _reader_on(str(tmp_path / "no-such-dir" / "db.sqlite3")):
        assert read_visible(str(uuid.uuid4()), OWNER) is USE_STORE
    assert "default" not in loop_sqlite._readers and "default" not in loop_sqlite._elsewhere


@on_sqlite
def test_an_init_command_that_fails_leaves_the_read_to_the_store(tmp_path):
    with _reader_on(str(tmp_path / "db.sqlite3"), init_command="PRAGMA no_such_pragma = (") as create:
        assert read_visible(str(uuid.uuid4()), OWNER) is USE_STORE
        assert read_visible(str(uuid.uuid4()), OWNER) is USE_STORE
    assert create.call_count == 2  # not remembered as another backend: tried again
    assert "default" not in loop_sqlite._readers and "default" not in loop_sqlite._elsewhere


@on_sqlite
def test_a_renamed_database_gets_a_connection_of_its_own(tmp_path):
    task = make_task()
    assert isinstance(read_visible(str(task.id), OWNER), Task)
    database, _, first = loop_sqlite._readers["default"]
    other = str(tmp_path / "other.sqlite3")
    sqlite3.connect(other).close()
    with mock.patch.dict(database.settings_dict, {"NAME": other}):
        with _reader_on(other):
            assert read_visible(str(task.id), OWNER) is USE_STORE  # no task table there: dropped
    assert isinstance(read_visible(str(task.id), OWNER), Task)
    assert loop_sqlite._readers["default"].link is not first


@on_sqlite
async def test_the_postgresql_read_is_never_tried_on_sqlite():
    task = await sync_to_async(make_task)()
    loop_postgres._elsewhere.discard("default")
    try:
        with mock.patch.object(loop_sqlite, "read_visible", return_value=USE_STORE):  # SQLite's own read declines
            found = await PLUGIN.store.avisible(str(task.id), OWNER)
        assert found is not None and found.id == task.id  # through the store
        assert "default" in loop_postgres._elsewhere
        assert asyncio.get_running_loop() not in loop_postgres._loops  # nothing opened, nothing kept
    finally:
        loop_postgres._elsewhere.discard("default")


async def test_without_fast_paths_every_read_is_the_orms_in_the_store_threads(settings):
    settings.DJANGO_MCP = {**settings.DJANGO_MCP, "TASK_FAST_PATHS": False}
    task = await sync_to_async(make_task)(status_message="by the ORM")
    with (
        mock.patch.object(loop_sqlite, "read_visible", side_effect=AssertionError("read on the loop")),
        mock.patch.object(loop_postgres, "aread_visible", side_effect=AssertionError("read on the loop")),
        mock.patch("django_mcp.tasks.store.prepared.read", side_effect=AssertionError("prepared SQL")),
    ):
        found = await PLUGIN.store.avisible(str(task.id), OWNER)
        assert found is not None and found.status_message == "by the ORM"
        assert await PLUGIN.store.avisible(str(uuid.uuid4()), OWNER) is None
