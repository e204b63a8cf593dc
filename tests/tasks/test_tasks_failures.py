"""Failure paths of the tasks extension: a lost database, unstorable results, vanished rows, a failing layer."""

from __future__ import annotations

import asyncio
import json
import logging
import sqlite3
import uuid
from datetime import timedelta
from io import StringIO
from unittest import mock

import pytest
from django.core.management import call_command
from django.db import OperationalError, connection
from django.utils import timezone

from django_mcp.models import Task
from django_mcp.tasks import runner as runner_module
from django_mcp.tasks.context import RunningTask
from django_mcp.tasks.runner import asend_control
from django_mcp.tasks.store import errors
from tests.task_calls import create, get, owner_key, rpc, wait_for
from tests.task_servers import task_tools, tasks_server
from tests.waiting import MonotonicClock, move_monotonic
from tests.wire import post, request_body

pytestmark = pytest.mark.django_db(transaction=True)

PLUGIN = tasks_server.extension_plugins[0]


async def test_database_loss_answers_503_not_a_traceback(async_client, caplog):
    with (
        mock.patch.object(PLUGIN.store, "avisible", side_effect=OperationalError("connection refused")),
        caplog.at_level(logging.WARNING, logger="django.request"),
    ):
        response = await post(
            async_client,
            request_body(
                "tasks/get", {"taskId": "x"}, capabilities={"extensions": {"io.modelcontextprotocol/tasks": {}}}
            ),
            path="/mcp-tasks/",
        )
    assert response.status_code == 503 and response["Retry-After"] == "2"  # the chaos run found none here
    error = json.loads(response.content)["error"]
    assert error["code"] == -32603 and "Database unavailable" in error["message"]
    # Logged once a minute where it failed; Django's request logger adds no line per request.
    assert not [r for r in caplog.records if r.name == "django.request"]


async def test_database_loss_during_task_creation_is_503_not_a_tool_error(async_client):
    with mock.patch.object(PLUGIN.store, "acreate", side_effect=OperationalError("connection refused")):
        body = await rpc(async_client, "tools/call", {"name": "slow"}, status=503)
    assert body["error"]["code"] == -32603


async def test_database_loss_in_auth_is_503(async_client):
    response = await post(
        async_client, request_body("server/discover"), path="/mcp-bearer/", headers={"Authorization": "Bearer db-down"}
    )
    assert response.status_code == 503
    assert json.loads(response.content)["error"]["code"] == -32603


async def test_final_write_is_retried_while_the_database_is_down(async_client):
    real_finish = PLUGIN.store.afinish
    calls = {"n": 0}

    async def flaky_finish(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] <= 2:
            raise OperationalError("server closed the connection")
        return await real_finish(*args, **kwargs)

    with mock.patch.object(PLUGIN.store, "afinish", flaky_finish):
        task_id = (await create(async_client, "quick", {"text": "persist"}))["taskId"]
        done = await wait_for(async_client, task_id, "completed")
    assert calls["n"] == 3
    assert done["result"]["content"][0]["text"] == "task:persist"


async def test_finish_is_a_compare_and_set():
    task = await Task.objects.acreate(tool="t", owner="o", poll_interval_ms=1)
    first = await PLUGIN.store.afinish(task.pk, "completed", result={"content": []})
    second = await PLUGIN.store.afinish(task.pk, "cancelled")
    assert first is not None and first.status == "completed"
    assert second is None
    await task.arefresh_from_db()
    assert task.status == "completed"


async def test_a_result_that_is_not_json_completes_with_is_error(async_client):
    task_id = (await create(async_client, "non_json_result"))["taskId"]
    done = await wait_for(async_client, task_id, "completed", "failed")
    assert done["status"] == "completed"
    assert done["result"]["isError"] is True
    assert "not JSON" in done["result"]["content"][0]["text"]
    for _ in range(200):  # the supervisor lets go once its final write is stored
        if not PLUGIN.runner.running_here(task_id):
            break
        await asyncio.sleep(0.01)
    assert not PLUGIN.runner.running_here(task_id)


async def test_progress_of_a_task_never_reaches_the_creating_request(async_client):
    body = request_body(
        "tools/call",
        {"name": "progress_then_task"},
        capabilities={"extensions": {"io.modelcontextprotocol/tasks": {}}},
        progressToken="p",
    )
    response = await post(async_client, body, path="/mcp-tasks/")
    assert response["Content-Type"].startswith("application/json")
    assert json.loads(response.content)["result"]["resultType"] == "task"


async def test_a_row_deleted_while_waiting_for_input_stops_its_run(async_client, settings):
    # A parked task makes no queries of its own: the maintenance loop notices the row is gone.
    settings.DJANGO_MCP = {**settings.DJANGO_MCP, "TASK_LEASE_RENEW_SECONDS": 0.05, "TASK_LEASE_SECONDS": 1}
    task_id = (await create(async_client, "two_keys"))["taskId"]
    await wait_for(async_client, task_id, "input_required")
    assert PLUGIN.runner.running_here(task_id)
    await Task.objects.filter(pk=task_id).adelete()
    for _ in range(300):
        if not PLUGIN.runner.running_here(task_id):
            break
        await asyncio.sleep(0.01)
    assert not PLUGIN.runner.running_here(task_id)
    assert not await Task.objects.filter(pk=task_id).aexists()  # nothing was written back


async def test_a_task_failed_elsewhere_stops_running_here(async_client, settings):
    settings.DJANGO_MCP = {**settings.DJANGO_MCP, "TASK_LEASE_RENEW_SECONDS": 0.05, "TASK_LEASE_SECONDS": 1}
    task_id = (await create(async_client, "slow", {"seconds": 30}))["taskId"]
    await Task.objects.filter(pk=task_id).aupdate(status="failed", error={"code": -32603, "message": "reaped"})
    for _ in range(300):
        if not PLUGIN.runner.running_here(task_id):
            break
        await asyncio.sleep(0.01)
    assert not PLUGIN.runner.running_here(task_id)
    row = await Task.objects.aget(pk=task_id)
    assert (row.status, row.error["message"]) == ("failed", "reaped")


async def test_an_orphaned_task_is_failed_by_whoever_reads_it(async_client):
    task = await Task.objects.acreate(
        tool="slow",
        owner=owner_key("mcp_tasks", "nobody"),
        poll_interval_ms=100,
        node="dead-process",
        lease_expires_at=timezone.now() - timedelta(seconds=1),
    )
    result = (await get(async_client, str(task.pk)))["result"]
    assert result["status"] == "failed"
    assert result["error"]["message"].startswith("Task owner stopped")


async def test_request_input_needs_at_least_one_request():
    task = await Task.objects.acreate(tool="t", owner="o", poll_interval_ms=1)
    context = RunningTask(PLUGIN.store, task, task_tools.get("quick"), {})
    with pytest.raises(ValueError, match="at least one"):
        await context.arequest_input({})


async def test_listen_stream_whose_layer_fails_ends_with_an_error():
    from channels.layers import get_channel_layer

    from django_mcp.server.listen import ListenStream

    layer = get_channel_layer()
    stream = ListenStream("broken", {}, ["broken.group"], [], result_meta={}, keepalive_seconds=5, queue_size=4)
    events = stream.aevents()
    assert b"acknowledged" in await anext(events)
    with mock.patch.object(layer, "receive", side_effect=ConnectionError("redis went away")):
        rest = [chunk async for chunk in events]
    final = json.loads(rest[-1].decode().split("data: ", 1)[1])
    assert final["id"] == "broken"
    assert final["error"]["code"] == -32603 and "channel layer" in final["error"]["message"]


async def test_too_many_task_ids_are_refused(async_client):
    body = request_body(
        "subscriptions/listen",
        {"notifications": {"taskIds": [f"t{i}" for i in range(1001)]}},
        capabilities={"extensions": {"io.modelcontextprotocol/tasks": {}}},
    )
    response = await post(async_client, body, path="/mcp-tasks/")
    assert response.status_code == 400
    assert "at most 1000" in json.loads(response.content)["error"]["message"]


async def test_clear_tasks_command_deletes_only_expired_tasks():
    now = timezone.now()
    await Task.objects.acreate(tool="a", owner="o", poll_interval_ms=1, expires_at=now - timedelta(seconds=1))
    await Task.objects.acreate(tool="b", owner="o", poll_interval_ms=1, expires_at=now + timedelta(hours=1))
    await Task.objects.acreate(tool="c", owner="o", poll_interval_ms=1, expires_at=None)
    out = StringIO()
    from asgiref.sync import sync_to_async

    await sync_to_async(call_command)("mcp_clear_tasks", stdout=out)
    assert out.getvalue().strip() == "Deleted 1 expired task(s)."
    assert sorted([t async for t in Task.objects.values_list("tool", flat=True)]) == ["b", "c"]


async def test_session_user_is_the_default_binding(async_client):
    from asgiref.sync import sync_to_async
    from django.contrib.auth.models import User

    ada = await sync_to_async(User.objects.create_user)("ada", "ada@example.com", "pw")
    bob = await sync_to_async(User.objects.create_user)("bob", "bob@example.com", "pw")
    await async_client.aforce_login(ada)
    task_id = (await create(async_client, "slow", path="/mcp-small/"))["taskId"]
    row = await Task.objects.aget(pk=task_id)
    assert row.owner == owner_key("mcp_small", f"user:{ada.pk}")
    await async_client.aforce_login(bob)
    assert (await get(async_client, task_id, path="/mcp-small/"))["error"]["code"] == -32602


async def test_a_dead_owner_is_found_without_a_reader_and_pushed():
    from channels.layers import get_channel_layer

    from django_mcp.tasks.notify import task_group

    task = await Task.objects.acreate(
        tool="slow",
        owner="o",
        scope="mcp_tasks",
        poll_interval_ms=100,
        node="dead-process",
        lease_expires_at=timezone.now() - timedelta(seconds=1),
        watched=True,  # a listen stream subscribed (it joined the group below)
    )
    layer = get_channel_layer()
    channel = await layer.new_channel()
    await layer.group_add(task_group(str(task.pk)), channel)
    await PLUGIN.runner.amaintain_once(15)  # what every process with the plugin runs each renew interval
    await task.arefresh_from_db()
    assert task.status == "failed" and task.error["message"].startswith("Task owner stopped")
    pushed = await asyncio.wait_for(layer.receive(channel), 2)
    assert pushed["message"]["params"]["status"] == "failed"


@pytest.mark.parametrize(("tool", "closes"), [("quick", 0), ("sync_starts_a_task", 1)])
async def test_only_a_run_that_used_its_thread_closes_connections_there(async_client, monkeypatch, tool, closes):
    # An async body that never touched the ORM has no thread: closing "its" connections would start
    # a thread (and a joiner) per task for nothing. A plain def body ran in one and must close there.
    supervisors = []
    start = PLUGIN.runner.start
    monkeypatch.setattr(PLUGIN.runner, "start", lambda *args: supervisors.append(start(*args)) or supervisors[-1])
    with mock.patch("django_mcp.tasks.runner.connections.close_all") as close_all:
        await create(async_client, tool)
        await asyncio.wait_for(supervisors[0], 10)  # the run, its outcome, then its thread's connections
    assert close_all.call_count == closes


async def test_a_cancel_between_the_commit_and_the_start_is_held_not_lost(async_client, monkeypatch):
    # The runner listens on its control group before the row exists; control for a task it is
    # about to start is held and applied at the start (no per-task join, no re-read of the row).
    create_row = PLUGIN.store.acreate

    async def create_then_cancel(**fields):
        task = await create_row(**fields)
        await asend_control(task.node, str(task.id), "cancel")  # as another worker would
        for _ in range(100):
            if PLUGIN.runner._early.get(str(task.id)):
                break
            await asyncio.sleep(0.01)
        return task

    monkeypatch.setattr(PLUGIN.store, "acreate", create_then_cancel)
    task_id = (await create(async_client, "slow", {"seconds": 30, "steps": 1}))["taskId"]
    done = await wait_for(async_client, task_id, "cancelled", timeout=2)  # the lease renewal is 5 s away
    assert done["statusMessage"] == "Cancelled"
    assert PLUGIN.runner._early == {}


async def test_control_is_sent_to_the_runner_that_owns_the_task(async_client):
    sent = []
    with mock.patch("django_mcp.tasks.runner.asend_control", side_effect=lambda *a: sent.append(a)):
        task = Task(id=uuid.uuid4(), node="another-process")
        await PLUGIN.runner.adeliver(task, "cancel")
        await PLUGIN.runner.adeliver(Task(id=uuid.uuid4(), node=""), "cancel")  # queued: nobody to tell
    assert sent == [("another-process", str(task.id), "cancel")]


async def test_a_row_of_this_runner_that_it_never_started_is_reaped_and_its_running_tasks_are_not(async_client):
    # A request cancelled between the commit and the start leaves a row naming this runner that no
    # one renews: the runner's own maintenance fails it once its lease lapsed, and never a task it runs.
    running = (await create(async_client, "slow", {"seconds": 30}))["taskId"]
    await Task.objects.filter(pk=running).aupdate(lease_expires_at=timezone.now() - timedelta(seconds=1))
    orphan = await Task.objects.acreate(
        tool="slow",
        owner="o",
        scope="mcp_tasks",
        poll_interval_ms=100,
        node=PLUGIN.runner.node,
        lease_expires_at=timezone.now() - timedelta(seconds=1),
    )
    await PLUGIN.runner.amaintain_once(15)
    await orphan.arefresh_from_db()
    assert orphan.status == "failed" and orphan.error["message"].startswith("Task owner stopped")
    assert (await Task.objects.aget(pk=running)).status == "working"  # renewed by the same maintenance round


def test_leases_are_renewed_a_batch_at_a_time_and_every_batch_is_read(monkeypatch):
    from django_mcp.tasks.store import operations

    monkeypatch.setattr(operations, "LEASE_BATCH", 2)
    past = timezone.now() - timedelta(seconds=1)
    rows = [
        Task.objects.create(tool="slow", owner="o", scope="mcp_tasks", poll_interval_ms=100, lease_expires_at=past)
        for _ in range(4)
    ]
    Task.objects.filter(pk=rows[1].pk).update(cancel_requested=True)
    Task.objects.filter(pk=rows[2].pk).update(input_responses={"ok": {"action": "accept"}})
    Task.objects.filter(pk=rows[3].pk).update(status="completed")
    ids = [str(row.pk) for row in rows] + [str(uuid.uuid4())]
    flagged, answered, vanished = operations.renew_leases(ids, 15)
    assert (flagged, answered, vanished) == ([ids[1]], [ids[2]], [ids[3], ids[4]])
    renewed = Task.objects.filter(lease_expires_at__gt=timezone.now(), pk__in=[row.pk for row in rows])
    assert sorted(str(pk) for pk in renewed.values_list("pk", flat=True)) == sorted(ids[:3])


def test_maintenance_takes_more_running_tasks_than_a_statement_takes_parameters():
    # SQLite takes at most 32,766 parameters per statement and PostgreSQL 65,535: a process running more
    # tasks than that still renews their leases, and its reaper still passes over them and finds the rest.
    from django_mcp.tasks.store import operations

    if connection.vendor == "sqlite":  # as SQLite is built by default (Debian's allows 250,000)
        connection.ensure_connection()
        connection.connection.setlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, 32_766)
    running = [str(uuid.uuid4()) for _ in range(70_000)]
    lapsed = Task.objects.create(
        tool="slow",
        owner="o",
        scope="mcp_tasks",
        poll_interval_ms=100,
        node="gone",
        lease_expires_at=timezone.now() - timedelta(seconds=1),
    )
    assert operations.renew_leases(running, 15) == ([], [], running)
    reaped = operations.reap_lapsed(running, {"code": -32603, "message": "Task owner stopped"})
    assert [task.pk for task in reaped] == [lapsed.pk]


# -- a database outage longer than the lease: live tasks keep their outcome ---------------------------------


@pytest.fixture
def clock(monkeypatch) -> MonotonicClock:
    return move_monotonic(monkeypatch, runner_module, errors)


@pytest.fixture
def runner_after_an_outage(settings):
    """PLUGIN's runner as its maintenance leaves it when the database went away and came back just now."""
    runner = PLUGIN.runner
    saved = runner._reachable_since
    settings.DJANGO_MCP = {**settings.DJANGO_MCP, "TASK_LEASE_SECONDS": 0.6, "TASK_LEASE_RENEW_SECONDS": 0.2}
    runner._database_reached(False)
    runner._database_reached(True)
    yield runner
    runner._reachable_since = saved


async def lapsed_task_of_another_process() -> Task:
    return await Task.objects.acreate(
        tool="slow",
        owner=owner_key("mcp_tasks", "nobody"),
        scope="mcp_tasks",
        poll_interval_ms=100,
        node="alive-but-cut-off-too",
        lease_expires_at=timezone.now() - timedelta(seconds=30),
    )


async def test_a_lapsed_lease_is_not_reaped_right_after_an_outage(async_client, clock, runner_after_an_outage):
    task = await lapsed_task_of_another_process()
    assert not runner_after_an_outage.may_reap()
    assert (await get(async_client, str(task.pk)))["result"]["status"] == "working"  # touched: not reaped
    await runner_after_an_outage.amaintain_once(0.6)  # the sweep holds off too
    await task.arefresh_from_db()
    assert task.status == "working"
    # Its owner, alive, renews within a renew interval; one that does not is reaped a lease later.
    clock.ahead += 0.7
    assert runner_after_an_outage.may_reap()
    result = (await get(async_client, str(task.pk)))["result"]
    assert result["status"] == "failed" and result["error"]["message"].startswith("Task owner stopped")


async def test_maintenance_that_cannot_reach_the_database_holds_off_reaping(settings):
    runner = PLUGIN.runner
    saved = runner._reachable_since
    settings.DJANGO_MCP = {**settings.DJANGO_MCP, "TASK_LEASE_RENEW_SECONDS": 0.05, "TASK_LEASE_SECONDS": 0.6}
    calls = {"n": 0, "passed": 0}
    real = runner.amaintain_once

    async def down_then_up(lease_seconds):
        calls["n"] += 1
        if calls["n"] <= 2:
            raise OperationalError("connection refused")
        result = await real(lease_seconds)
        calls["passed"] += 1
        return result

    try:
        assert runner.may_reap()  # never saw the database fail
        with mock.patch.object(runner, "amaintain_once", down_then_up):
            loop_task = asyncio.ensure_future(runner._amaintain())
            # A pass that returned: the loop notes it before it next yields.
            while calls["passed"] < 1:
                await asyncio.sleep(0.02)
            loop_task.cancel()
        assert runner._reachable_since is not None and not runner.may_reap()
    finally:
        runner._reachable_since = saved


async def test_progress_that_meets_a_lost_database_is_dropped_and_the_task_completes(async_client):
    async def down(*args, **kwargs):
        raise OperationalError("server closed the connection")

    with mock.patch.object(PLUGIN.store, "aset_status_message", down):
        task_id = (await create(async_client, "declared_sync_progress", {"steps": 3}))["taskId"]
        done = await wait_for(async_client, task_id, "completed", "failed")
    assert done["status"] == "completed", done
    assert done["result"]["content"] == [{"type": "text", "text": "3 steps"}]


async def test_the_final_write_retries_for_as_long_as_the_database_is_down_by_default(async_client, settings):
    from django_mcp.tasks.conf import get_tasks_settings

    assert get_tasks_settings().TASK_FINAL_WRITE_RETRY_SECONDS is None  # of any length
    real_finish = PLUGIN.store.afinish
    calls = {"n": 0}

    async def flaky_finish(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] <= 6:  # 0.1 + 0.2 + 0.4 + 0.8 + 1.6 + 3.2 s: past any short deadline
            raise OperationalError("server closed the connection")
        return await real_finish(*args, **kwargs)

    with mock.patch.object(PLUGIN.store, "afinish", flaky_finish):
        task_id = (await create(async_client, "quick", {"text": "kept"}))["taskId"]
        done = await wait_for(async_client, task_id, "completed", timeout=15)
    assert done["result"]["content"][0]["text"] == "task:kept"


async def test_a_body_that_asks_during_an_outage_waits_for_the_database_and_its_task_lives(async_client):
    # Parking for input and reading the answers wait out a lost database as the final write does; before,
    # the first failed write ended the task "the database was unavailable" while its owner was alive.
    real_park, real_take = PLUGIN.store.apark, PLUGIN.store.atake_answers
    failures = {"park": 3, "take": 3}

    async def flaky(name, real, *args, **kwargs):
        if failures[name] > 0:
            failures[name] -= 1
            raise driver_error(None, "server closed the connection unexpectedly")
        return await real(*args, **kwargs)

    with (
        mock.patch.object(PLUGIN.store, "apark", lambda *a, **k: flaky("park", real_park, *a, **k)),
        mock.patch.object(PLUGIN.store, "atake_answers", lambda *a, **k: flaky("take", real_take, *a, **k)),
    ):
        task_id = (await create(async_client, "declared", {"text": "outage"}))["taskId"]
        waiting = await wait_for(async_client, task_id, "input_required", timeout=10)
        key = next(iter(waiting["inputRequests"]))
        await rpc(async_client, "tasks/update", {"taskId": task_id, "inputResponses": {key: {"action": "accept"}}})
        done = await wait_for(async_client, task_id, "completed", "failed", timeout=15)
    assert done["status"] == "completed", done
    assert done["result"]["content"][0]["text"].endswith("outage accept")
    assert failures == {"park": 0, "take": 0}


# -- a known outage: answers at once ----------------------------------------------------------------------


def driver_error(sqlstate: str | None, message: str = "connection refused") -> OperationalError:
    """A Django OperationalError as Django's wrapper raises it, the driver's error as its cause."""

    class DriverError(Exception):
        pass

    DriverError.__module__ = "psycopg"  # as psycopg's own errors are

    cause = DriverError(message)
    cause.sqlstate = sqlstate  # type: ignore[attr-defined]
    error = OperationalError(message)
    error.__cause__ = cause
    return error


@pytest.mark.parametrize(
    "error, lost",
    [
        (driver_error(None), True),  # refused, or the pool's timeout: psycopg gives no SQLSTATE
        (driver_error("08006"), True),
        (driver_error("57P01", "terminating connection due to administrator command"), True),
        (driver_error("40001", "could not serialize access"), False),  # the query's own problem
        (OperationalError("no cause: raised by code, not a driver"), False),
    ],
)
def test_lost_connection_tells_an_outage_from_a_query_error(error, lost):
    from django_mcp.tasks.store.errors import lost_connection

    assert lost_connection(error) is lost


def test_psycopg2s_pgcode_is_read_and_other_drivers_trip_nothing():
    from django_mcp.tasks.store.errors import lost_connection

    class Psycopg2Error(Exception):
        pgcode = "40P01"  # a deadlock: the query's problem

    Psycopg2Error.__module__ = "psycopg2.errors"
    deadlock = OperationalError("deadlock detected")
    deadlock.__cause__ = Psycopg2Error("deadlock detected")
    assert not lost_connection(deadlock)

    class MySQLError(Exception):
        pass

    MySQLError.__module__ = "MySQLdb"
    other = OperationalError("Lock wait timeout exceeded")
    other.__cause__ = MySQLError(1205, "Lock wait timeout exceeded")
    assert not lost_connection(other)


@pytest.mark.parametrize(
    "errno, message, lost",
    [
        (2003, "Can't connect to MySQL server on '127.0.0.1' (111)", True),
        (2006, "MySQL server has gone away", True),
        (2013, "Lost connection to MySQL server during query", True),
        (1053, "Server shutdown in progress", True),
        (1205, "Lock wait timeout exceeded; try restarting transaction", False),
        (1213, "Deadlock found when trying to get lock", False),
    ],
)
def test_mysql_and_mariadb_outages_are_told_from_query_errors(errno, message, lost):
    from django_mcp.tasks.store.errors import lost_connection

    mysqldb = pytest.importorskip("MySQLdb")  # the mysql extra
    error = OperationalError(message)
    error.__cause__ = mysqldb.OperationalError(errno, message)
    assert lost_connection(error) is lost


@pytest.mark.parametrize(
    "errno, message", [(1146, "Table 'test.django_mcp_task' doesn't exist"), (1054, "Unknown column")]
)
def test_a_missing_mysql_table_or_column_names_migrate(errno, message):
    from django.db import ProgrammingError

    from django_mcp.tasks.store.errors import unmigrated

    mysqldb = pytest.importorskip("MySQLdb")
    error = ProgrammingError(message)
    error.__cause__ = mysqldb.ProgrammingError(errno, message)
    assert unmigrated(error)
    error.__cause__ = mysqldb.ProgrammingError(1064, "You have an error in your SQL syntax")
    assert not unmigrated(error)


def test_a_sqlite_lock_is_no_outage():
    import sqlite3

    from django_mcp.tasks.store.errors import lost_connection

    error = OperationalError("database is locked")
    error.__cause__ = sqlite3.OperationalError("database is locked")
    assert not lost_connection(error)


def test_a_known_outage_fails_calls_at_once_and_probes_once_a_period(clock):
    from django_mcp.tasks.store.errors import KnownOutage

    outage = KnownOutage(probe_seconds=0.2)
    outage.admit()  # nothing known: through
    outage.failed(driver_error(None))
    with pytest.raises(OperationalError, match="unreachable a moment ago"):
        outage.admit()
    clock.ahead += 0.25
    outage.admit()  # the probe goes through ...
    with pytest.raises(OperationalError):
        outage.admit()  # ... and the others meanwhile fail at once
    outage.succeeded()
    outage.admit()  # the database is back


async def test_the_store_door_stops_calling_a_database_it_found_unreachable(monkeypatch):
    from django_mcp.tasks.store import TaskStore, operations

    store = TaskStore(2)
    calls = {"n": 0}

    def down(task_id) -> None:
        calls["n"] += 1
        raise driver_error(None)

    monkeypatch.setattr(operations, "reload", down)
    try:
        for _ in range(5):
            with pytest.raises(OperationalError):
                await store.areload(1)
        assert calls["n"] == 1  # the rest failed without queueing for the database
    finally:
        store.close()


async def test_a_lost_connection_seen_by_a_request_holds_off_reaping_too(async_client, settings, clock):
    """Under WSGI no maintenance runs: what the store's door finds is the process's knowledge of an outage."""
    settings.DJANGO_MCP = {**settings.DJANGO_MCP, "TASK_LEASE_SECONDS": 0.6}
    runner, outage = PLUGIN.runner, PLUGIN.store.outage
    saved = (runner._reachable_since, outage.last_lost)
    try:
        runner._reachable_since = float("-inf")  # maintenance never said anything
        outage.failed(driver_error(None))
        outage.succeeded()
        task = await lapsed_task_of_another_process()
        assert (await get(async_client, str(task.pk)))["result"]["status"] == "working"
        clock.ahead += 0.7
        assert (await get(async_client, str(task.pk)))["result"]["status"] == "failed"
    finally:
        runner._reachable_since, outage.last_lost = saved


def test_a_known_outages_own_refusal_reads_as_a_lost_connection():
    # Else a body waiting out an outage would give up after a minute once the outage was known.
    from django_mcp.tasks.store.errors import KnownOutage, lost_connection

    outage = KnownOutage(probe_seconds=60)
    outage.failed(driver_error(None))
    with pytest.raises(OperationalError) as refused:
        outage.admit()
    assert lost_connection(refused.value)
