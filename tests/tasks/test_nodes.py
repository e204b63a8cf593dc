"""Each process that runs tasks writes its row (``Node``): the monitor's "workers last seen"."""

from __future__ import annotations

import logging
import os
import sys
import time
from datetime import timedelta

import pytest
from django.utils import timezone

from django_mcp.tasks import fleet
from django_mcp.tasks.models import Node
from django_mcp.tasks.store import nodes
from django_mcp.tasks.store.nodes import record_node
from tests.fleet_calls import NAMESPACE, create
from tests.fleetapp.servers import fleet_server
from tests.task_servers import small_server

pytestmark = pytest.mark.django_db(transaction=True)


def said(**fields: object) -> dict[str, object]:
    return {"server": "s", "role": "web", "host": "h", "pid": 1, "command": "daphne", **fields}


def test_a_row_is_written_once_and_then_brought_up_to_date():
    start = timezone.now() - timedelta(minutes=5)
    record_node("n1", start, **said(running=2, listen_streams=7))
    record_node("n1", start + timedelta(minutes=1), **said(running=0, listen_streams=3))
    node = Node.objects.get(name="n1")  # one row: other processes' runners may write theirs meanwhile
    assert (node.started_at, node.seen_at) == (start, start + timedelta(minutes=1))
    assert (node.running, node.listen_streams, node.command) == (0, 3, "daphne")


def test_a_process_not_seen_for_a_day_is_forgotten_by_the_next_write_a_minute_on(monkeypatch):
    now = timezone.now()
    record_node("gone", now - timedelta(days=1, seconds=1), **said())
    record_node("quiet", now - timedelta(hours=23), **said())
    monkeypatch.setattr(nodes, "_pruned_at", float("-inf"))  # none pruned for a while
    record_node("here", now, **said())
    assert set(Node.objects.filter(name__in=["gone", "quiet", "here"]).values_list("name", flat=True)) == {
        "quiet",
        "here",
    }
    record_node("gone too", now - timedelta(days=2), **said())
    record_node("here", now, **said())  # within the minute: not pruned again
    assert Node.objects.filter(name="gone too").exists()
    monkeypatch.setattr(nodes, "_pruned_at", time.monotonic() - 61)  # a minute on
    record_node("here", now, **said())
    assert not Node.objects.filter(name="gone too").exists()


async def test_the_maintenance_writes_the_row_of_the_process_it_runs_in():
    runner = small_server.extension_plugins[0].runner
    await runner.amaintain_once(lease_seconds=30)
    node = await Node.objects.aget(name=runner.node)
    assert (node.server, node.role, node.pid, node.running) == ("mcp_small", "web", os.getpid(), 0)
    assert node.command and node.host
    first_seen = node.seen_at
    await runner.amaintain_once(lease_seconds=30)
    again = await Node.objects.aget(name=runner.node)
    assert again.seen_at >= first_seen and again.started_at == node.started_at


def fleet_runner():
    return next(p for p in fleet_server.extension_plugins if hasattr(p, "runner")).runner


@pytest.fixture
def _marks(tmp_path, monkeypatch):
    monkeypatch.setenv("FLEET_MARKS", str(tmp_path))


@pytest.mark.usefixtures("_marks")
async def test_a_fleet_worker_is_seen_when_its_job_ends(async_client):
    handle = await create(async_client, "sleeper", {"seconds": 0.01})
    assert await fleet.arun(handle["taskId"], NAMESPACE) == "completed"
    node = await Node.objects.aget(name=fleet_runner().node)
    assert (node.server, node.role, node.running) == (NAMESPACE, "worker", 0)


@pytest.mark.usefixtures("_marks")
async def test_a_worker_that_cannot_write_its_row_still_runs_its_job(async_client, monkeypatch, caplog):
    async def refuse(*args, **kwargs):
        raise ConnectionError("database gone")

    monkeypatch.setattr(fleet_runner().store, "arecord_node", refuse)
    handle = await create(async_client, "sleeper", {"seconds": 0.01})
    with caplog.at_level(logging.WARNING, "django_mcp.tasks"):
        assert await fleet.arun(handle["taskId"], NAMESPACE) == "completed"
    assert "could not record itself for the task monitor: database gone" in caplog.text
    assert not await Node.objects.filter(name=fleet_runner().node).aexists()


@pytest.mark.parametrize(
    ("argv", "command"),
    [
        (["/srv/venv/lib/python3.12/site-packages/celery/__main__.py", "-A", "proj", "worker"], "celery -A proj"),
        (["/srv/app/manage.py", "db_worker"], "manage.py db_worker"),
        ([], "python"),
    ],
)
async def test_the_row_names_what_the_process_runs(monkeypatch, argv, command):
    monkeypatch.setattr(sys, "argv", argv)
    runner = small_server.extension_plugins[0].runner
    await runner.arecord_node()
    assert (await Node.objects.aget(name=runner.node)).command == command


@pytest.mark.usefixtures("_marks")
def test_the_job_runs_its_task_on_an_event_loop_of_its_own(async_client):
    """What a worker process calls (``run_mcp_task``, sync): it claims, runs and records, then says so."""
    from asgiref.sync import async_to_sync

    from django_mcp.tasks.fleet import get_run_mcp_task

    handle = async_to_sync(create)(async_client, "sleeper", {"seconds": 0.01})
    assert get_run_mcp_task().func(handle["taskId"], NAMESPACE) == "completed"
    assert Node.objects.get(name=fleet_runner().node).role == "worker"
