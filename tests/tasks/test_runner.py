"""The runner (tasks/runner.py): supervising a task's body, cancelling it, its maintenance sweeps."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import time_machine
from asgiref.sync import sync_to_async

from django_mcp.models import Task
from django_mcp.tasks.models import TaskQuota
from tests.task_calls import create, error_of, get, rpc, wait_for
from tests.task_servers import EVENTS, small_server, tasks_server

pytestmark = pytest.mark.django_db(transaction=True)


# -- cancellation -----------------------------------------------------------------------------


async def test_cancel_acks_empty_and_the_task_ends_cancelled(async_client):
    handle = await create(async_client, "slow", {"seconds": 30})
    ack = await rpc(async_client, "tasks/cancel", {"taskId": handle["taskId"]}, status=200)
    assert set(ack["result"]) == {"resultType", "_meta"}
    assert ack["result"]["resultType"] == "complete"
    result = await wait_for(async_client, handle["taskId"], "cancelled")
    assert "result" not in result and "error" not in result
    again = await rpc(async_client, "tasks/cancel", {"taskId": handle["taskId"]}, status=200)
    assert again["result"]["resultType"] == "complete"
    assert (await get(async_client, handle["taskId"]))["result"]["status"] == "cancelled"


async def test_a_run_that_ignores_its_signal_is_cancelled_at_its_next_await(async_client):
    handle = await create(async_client, "stubborn")
    for _ in range(100):
        if EVENTS.get("stubborn") == "running":
            break
        await asyncio.sleep(0.01)
    await rpc(async_client, "tasks/cancel", {"taskId": handle["taskId"]}, status=200)
    await wait_for(async_client, handle["taskId"], "cancelled")
    assert EVENTS["stubborn"] == "cancelled, signal=True"


async def test_a_running_task_is_its_supervisor_alone(async_client):
    # The body runs in the asyncio task that records its outcome: one task, not two, per running task.
    runner = tasks_server.extension_plugins[0].runner
    handle = await create(async_client, "where_it_runs")
    for _ in range(100):
        if handle["taskId"] in EVENTS:
            break
        await asyncio.sleep(0.01)
    assert EVENTS[handle["taskId"]] is runner._supervisors[handle["taskId"]]


async def test_a_cancelled_run_records_its_outcome_in_a_task_no_longer_being_cancelled(async_client, monkeypatch):
    # Each cancel sent to the run counts on its asyncio task; once the run is over they are taken back,
    # so the final write (and what it publishes) can use asyncio.timeout and task groups as usual.
    plugin = tasks_server.extension_plugins[0]
    finish, cancelling = plugin.store.afinish, []

    async def afinish(*args: Any, **kwargs: Any) -> Any:
        cancelling.append(asyncio.current_task().cancelling())
        return await finish(*args, **kwargs)

    monkeypatch.setattr(plugin.store, "afinish", afinish)
    handle = await create(async_client, "where_it_runs")
    for _ in range(100):
        if handle["taskId"] in EVENTS:
            break
        await asyncio.sleep(0.01)
    assert plugin.runner.act_here(handle["taskId"], "cancel")
    assert plugin.runner.act_here(handle["taskId"], "cancel")  # e.g. tasks/cancel, then the maintenance's flag
    await wait_for(async_client, handle["taskId"], "cancelled")
    assert cancelling == [0]


async def test_the_signal_event_is_set_by_a_cancel_before_or_after_it_is_first_asked_for():
    from django_mcp.tasks import TaskContext

    waited_on, asked_late = TaskContext(), TaskContext()
    waiter = asyncio.ensure_future(waited_on.signal.wait())
    await asyncio.sleep(0)
    assert not waiter.done() and not waited_on.cancelled
    waited_on.mark_cancelled()
    await asyncio.wait_for(waiter, 1)
    assert waited_on.cancelled and waited_on.signal.is_set()
    asked_late.mark_cancelled()  # no event made yet (most tasks never ask for one)
    assert asked_late.cancelled and asked_late.signal.is_set()


async def test_terminal_states_never_change(async_client):
    handle = await create(async_client, "quick")
    done = await wait_for(async_client, handle["taskId"], "completed")
    await rpc(async_client, "tasks/cancel", {"taskId": handle["taskId"]}, status=200)
    after = (await get(async_client, handle["taskId"]))["result"]
    assert after["status"] == "completed"
    assert after["lastUpdatedAt"] == done["lastUpdatedAt"]
    # The compare-and-set refuses to move a terminal task, whoever asks.
    from django_mcp.tasks.store import operations

    assert await sync_to_async(operations.finish)(handle["taskId"], "cancelled") is None
    assert (await Task.objects.aget(pk=handle["taskId"])).status == "completed"


async def test_cancel_unknown_task_is_32602(async_client):
    body = await rpc(async_client, "tasks/cancel", {"taskId": str(uuid.uuid4())}, status=400)
    assert error_of(body)["code"] == -32602


# -- maintenance --------------------------------------------------------------------------------


async def test_the_maintenance_loop_sweeps_expired_tasks_without_a_creation(async_client):
    ids = [(await create(async_client, "quick", path="/mcp-small/"))["taskId"] for _ in range(2)]
    for task_id in ids:
        await wait_for(async_client, task_id, "completed", path="/mcp-small/")
    with time_machine.travel(datetime.now(UTC) + timedelta(seconds=1.6), tick=True):
        await small_server.extension_plugins[0].runner.amaintain_once(lease_seconds=30)
    assert not await Task.objects.filter(pk__in=ids).aexists()
    assert (await TaskQuota.objects.aget(scope="mcp_small", owner="")).count == 0


# -- the final write ------------------------------------------------------------------------------


async def test_a_final_write_the_database_never_takes_is_left_to_the_lease(async_client, settings, monkeypatch, caplog):
    from django.db import OperationalError

    from tests.waiting import until

    settings.DJANGO_MCP = {**settings.DJANGO_MCP, "TASK_FINAL_WRITE_RETRY_SECONDS": 0}
    store = small_server.extension_plugins[0].store

    async def down(*args: Any, **kwargs: Any) -> None:
        raise OperationalError("disk I/O error")  # not a lost connection: retried a minute at most, here 0 s

    monkeypatch.setattr(store, "afinish", down)
    handle = await create(async_client, "quick", path="/mcp-small/")
    said = "ended completed but the database stayed unavailable; its lease will lapse"
    await until(lambda: said in caplog.text, 10, "the runner giving up on the final write")
    assert "retrying" not in caplog.text  # 0 s means no retry, whatever the error (it once meant a minute)
    assert (await Task.objects.aget(pk=handle["taskId"])).status == "working"  # the lease's to settle


async def test_an_outcome_the_database_refuses_fails_the_task_as_unstorable(async_client, monkeypatch, caplog):
    store = small_server.extension_plugins[0].store
    finish = store.afinish

    async def refuse_the_result(task_id: Any, status: str, **fields: Any) -> Any:
        if "result" in fields:
            raise ValueError("a value the column cannot hold")
        return await finish(task_id, status, **fields)

    monkeypatch.setattr(store, "afinish", refuse_the_result)
    handle = await create(async_client, "quick", path="/mcp-small/")
    done = await wait_for(async_client, handle["taskId"], "completed", "failed", path="/mcp-small/")
    assert done["status"] == "failed" and done["statusMessage"] == "Task result could not be stored"
    assert "could not store its outcome" in caplog.text
