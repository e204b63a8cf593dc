"""The worker fleet, live: 2 daphne web processes and 2 ``manage.py db_worker`` processes on one
PostgreSQL database and a private Redis, driven over HTTP as a client would.

Task bodies of /mcp-fleet/ (tests/fleetapp) are enqueued on the "fleet" Django Tasks backend
(django_tasks_db, queue "mcp") and run by the workers. Every process started here is stopped by PID.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from asgiref.sync import sync_to_async

from tests.live.fleet import EXT, TENANT, DbWorker, call, mark, poll, rpc
from tests.live.http_listen import Listen
from tests.live.servers import CLUSTER_MARKS, Redis, cluster_env, start
from tests.wire import headers_for, request_body

pytestmark = CLUSTER_MARKS

LEASE = 2.0
GRACE = 1.0
FIGURES: dict[str, Any] = {}
FIGURES_FILE = Path(os.environ.get("DJANGO_MCP_FLEET_FIGURES", "/tmp/django-mcp-fleet-figures.json"))


RQ_WORKER = ["rqworker", "mcp", "--worker-class", "django_mcp.tasks.rq_worker.McpWorker"]
RQ_WORKER += ["--job-class", "django_tasks_rq.Job"]


@pytest.fixture(scope="module")
def fleet(django_db_setup, django_db_blocker):
    from django.db import connection

    with django_db_blocker.unblock():
        db_name = connection.settings_dict["NAME"]
    marks = Path(tempfile.mkdtemp(prefix="fleet-marks-"))
    spans = Path(tempfile.mkdtemp(prefix="fleet-spans-"))
    redis = Redis()
    redis.start()
    env = {
        **cluster_env(db_name, redis, LEASE, GRACE),
        "FLEET_MARKS": str(marks),
        "DJANGO_MCP_TEST_OTEL_DIR": str(spans),  # every process exports its spans (tests/otel_export.py)
        "PYTHONUNBUFFERED": "1",
    }
    webs: dict[str, Any] = {}
    workers = {name: DbWorker(name, env) for name in ("W1", "W2")}
    try:
        for name in ("A", "B"):
            webs[name] = start(["-m", "daphne", "-b", "127.0.0.1", "-p", "{port}", "tests.asgi:application"], env=env)
        for worker in workers.values():
            worker.start()
        yield {"web": webs, "workers": workers, "marks": marks, "env": env, "spans": spans}
    finally:
        for worker in workers.values():
            worker.stop()
        for web in webs.values():
            web.stop()
        redis.stop()
        shutil.rmtree(marks, ignore_errors=True)
        shutil.rmtree(spans, ignore_errors=True)
        FIGURES_FILE.write_text(json.dumps(FIGURES, indent=2))


def url(fleet, name: str) -> str:
    return fleet["web"][name].base + "/mcp-fleet/"


def worker_by_pid(fleet, pid: int) -> DbWorker:
    """The worker of this test whose process ran the body (db_worker runs it in its main thread)."""
    for worker in fleet["workers"].values():
        if worker.alive() and worker.pid == pid:
            return worker
    raise AssertionError(f"the body ran in {pid}, not in a db_worker of this test")


async def test_a_trace_follows_the_task_from_web_a_to_the_worker_and_web_b(fleet):
    from tests.otel_export import read

    a, b = url(fleet, "A"), url(fleet, "B")
    client_trace = "5a" * 16

    async def traced(to, method, params, span_id):
        body = request_body(method, params, capabilities=EXT, traceparent=f"00-{client_trace}-{span_id}-01")
        response = await client.post(to, content=json.dumps(body), headers={**headers_for(body), **TENANT})
        return response.json()

    async with httpx.AsyncClient(timeout=10) as client:
        created = await traced(a, "tools/call", {"name": "sleeper", "arguments": {"seconds": 0.05}}, "a" * 16)
        task_id = created["result"]["taskId"]
        for _ in range(400):
            got = await traced(b, "tasks/get", {"taskId": task_id}, "b" * 16)
            if got["result"]["status"] == "completed":
                break
            await asyncio.sleep(0.02)
        assert got["result"]["status"] == "completed", got
    spans = []
    for _ in range(100):  # the worker's span ends as its run does, just after the row is written
        spans = read(fleet["spans"])
        if any(s["name"] == "task sleeper" and s["attributes"].get("mcp.task.id") == task_id for s in spans):
            break
        await asyncio.sleep(0.05)
    creation = next(s for s in spans if s["name"] == "tools/call sleeper" and s["trace_id"] == client_trace)
    run = next(s for s in spans if s["name"] == "task sleeper" and s["attributes"].get("mcp.task.id") == task_id)
    reads = [s for s in spans if s["name"] == "tasks/get" and s["trace_id"] == client_trace]
    assert creation["parent_span_id"] == "a" * 16 and creation["pid"] == fleet["web"]["A"].proc.pid
    assert run["links"] == [creation["span_id"]] and run["pid"] in {w.pid for w in fleet["workers"].values()}
    assert reads and {s["parent_span_id"] for s in reads} == {"b" * 16}
    assert {s["pid"] for s in reads} == {fleet["web"]["B"].proc.pid}


async def test_create_update_complete_across_web_processes_and_workers(fleet):
    a, b = url(fleet, "A"), url(fleet, "B")
    async with httpx.AsyncClient(timeout=10) as client:
        task_id = await call(client, a, "heavy", {"text": "hi"})
        async with Listen(client, b, {"taskIds": [task_id]}) as stream:
            assert (await stream.frame())["params"]["notifications"] == {"taskIds": [task_id]}
            waiting = await poll(client, b, task_id, "input_required")
            _, pid = await mark(fleet, task_id, "started")
            worker_by_pid(fleet, pid)
            key = next(iter(waiting["inputRequests"]))
            answers = {key: {"action": "accept", "content": {"ok": True}}}
            assert "result" in await rpc(client, b, "tasks/update", {"taskId": task_id, "inputResponses": answers})
            statuses = []
            while not statuses or statuses[-1] != "completed":
                frame = await stream.frame(timeout=20)
                statuses.append(frame["params"]["status"])
        assert "input_required" in statuses or "working" in statuses
        done = await poll(client, a, task_id, "completed")
        assert done["result"]["content"][0]["text"] == f"heavy hi pid={pid} answered=accept"


async def test_cancel_mid_run_reaches_the_worker(fleet):
    a, b = url(fleet, "A"), url(fleet, "B")
    latencies: dict[str, list[float]] = {"settled": [], "at_start": []}
    async with httpx.AsyncClient(timeout=10) as client:
        for settle in [0.2] * 10 + [0.0] * 5:  # 0.2 s after the body started, then at once
            task_id = await call(client, a, "sleeper", {"seconds": 60})
            await mark(fleet, task_id, "started")
            await asyncio.sleep(settle)
            sent = time.time()
            assert "result" in await rpc(client, b, "tasks/cancel", {"taskId": task_id})
            stopped, _ = await mark(fleet, task_id, "cancelled", timeout=10)
            latencies["settled" if settle else "at_start"].append((stopped - sent) * 1000)
            assert (await poll(client, a, task_id, "cancelled"))["status"] == "cancelled"
    for name, values in latencies.items():
        values.sort()
        FIGURES[f"cancel_send_to_body_ms_{name}"] = {
            "p50": round(values[len(values) // 2], 1),
            "max": round(values[-1], 1),
            "n": len(values),
        }
        assert values[len(values) // 2] <= 1000


async def test_a_queued_task_cancelled_with_no_worker_never_runs(fleet):
    from django_tasks_db.models import DBTaskResult

    from django_mcp.models import Task

    a, b = url(fleet, "A"), url(fleet, "B")
    for worker in fleet["workers"].values():
        worker.stop()  # idle: each exits at once
    try:
        async with httpx.AsyncClient(timeout=10) as client:
            task_id = await call(client, a, "sleeper", {"seconds": 60})
            assert "result" in await rpc(client, b, "tasks/cancel", {"taskId": task_id})
            cancelled = await poll(client, a, task_id, "cancelled", timeout=2)
            assert cancelled["statusMessage"] == "Cancelled before it started"
    finally:
        for worker in fleet["workers"].values():
            worker.start()
    job_id = (await Task.objects.aget(pk=task_id)).job_id
    deadline = time.monotonic() + 30
    while (job := await DBTaskResult.objects.aget(pk=job_id)).status != "SUCCESSFUL":
        assert time.monotonic() < deadline, job.status
        await asyncio.sleep(0.1)
    assert job.return_value == "not run: cancelled"  # a worker took the job and refused it
    assert not (fleet["marks"] / f"{task_id}.started").exists()
    assert (await sync_to_async(Task.objects.get)(pk=task_id)).status == "cancelled"


async def test_sigkill_of_the_worker_fails_the_task_within_the_lease(fleet):
    a, b = url(fleet, "A"), url(fleet, "B")
    async with httpx.AsyncClient(timeout=10) as client:
        task_id = await call(client, a, "sleeper", {"seconds": 60})
        _, pid = await mark(fleet, task_id, "started")
        worker = worker_by_pid(fleet, pid)
        killed = time.monotonic()
        worker.signal(signal.SIGKILL)
        worker.wait_exit(10)
        failed = await poll(client, b, task_id, "failed", timeout=LEASE * 5)
        FIGURES["worker_sigkill_to_failed_s"] = round(time.monotonic() - killed, 2)
        assert failed["error"]["code"] == -32603
        assert "owner stopped" in failed["error"]["message"]
        assert time.monotonic() - killed <= LEASE * 3
    worker.stop()
    worker.start()


@pytest.mark.parametrize("tool", ["sleeper", "sync_sleeper"])
async def test_sigterm_of_the_worker_interrupts_the_task_after_the_grace(fleet, tool):
    a, b = url(fleet, "A"), url(fleet, "B")
    async with httpx.AsyncClient(timeout=10) as client:
        task_id = await call(client, a, tool, {"seconds": 60})
        _, pid = await mark(fleet, task_id, "started")
        worker = worker_by_pid(fleet, pid)
        stopped = time.monotonic()
        worker.signal(signal.SIGTERM)
        final = await poll(client, b, task_id, "failed", "completed", timeout=15)
        elapsed = time.monotonic() - stopped
        assert worker.wait_exit(15) is not None, worker.output()
        FIGURES[f"worker_sigterm_to_final_s_{tool}"] = round(elapsed, 2)
        if tool == "sleeper":  # an async body is cancelled at the end of the grace
            assert final["status"] == "failed", final
            assert "interrupted" in final["error"]["message"]
            assert elapsed >= GRACE * 0.9
        else:  # a sync body sees task.cancelled during the grace and returns
            assert final["status"] in ("completed", "failed"), final
            await mark(fleet, task_id, "cancelled", timeout=5)
    worker.stop()
    worker.start()


# -- the rq leg: one web process, one rqworker (a work horse per job) -------------------------------


@pytest.fixture(scope="module")
def rq_fleet(fleet):
    redis = Redis()
    redis.start()
    env = {
        **fleet["env"],
        "DJANGO_MCP_TEST_RQ_URL": f"redis://127.0.0.1:{redis.port}/1",
        "DJANGO_MCP_TEST_FLEET_BACKEND": "rq",
    }
    web = None
    worker = DbWorker("rq", env, RQ_WORKER)
    try:
        web = start(["-m", "daphne", "-b", "127.0.0.1", "-p", "{port}", "tests.asgi:application"], env=env)
        worker.start()
        yield {"url": web.base + "/mcp-fleet/", "worker": worker, "marks": fleet["marks"], "redis": redis}
    finally:
        worker.stop()
        if web is not None:
            web.stop()
        redis.stop()


async def test_rq_runs_and_cancels_in_a_work_horse(rq_fleet):
    to, worker = rq_fleet["url"], rq_fleet["worker"]
    async with httpx.AsyncClient(timeout=10) as client:
        task_id = await call(client, to, "sleeper", {"seconds": 0.2})
        done = await poll(client, to, task_id, "completed", "failed", timeout=30)
        assert done["status"] == "completed", (done, worker.output())
        _, horse = await mark(rq_fleet, task_id, "started")
        assert horse != worker.pid  # a forked work horse ran it
        task_id = await call(client, to, "sleeper", {"seconds": 60})
        await mark(rq_fleet, task_id, "started")  # the body runs in its work horse
        sent = time.time()
        assert "result" in await rpc(client, to, "tasks/cancel", {"taskId": task_id})
        stopped, _ = await mark(rq_fleet, task_id, "cancelled", timeout=10)
        FIGURES["rq_cancel_send_to_body_ms"] = round((stopped - sent) * 1000, 1)
        assert (await poll(client, to, task_id, "cancelled"))["status"] == "cancelled"


async def test_rq_sigterm_of_the_worker_reaches_the_horse(rq_fleet):
    to, worker = rq_fleet["url"], rq_fleet["worker"]
    async with httpx.AsyncClient(timeout=10) as client:
        task_id = await call(client, to, "sleeper", {"seconds": 60})
        await mark(rq_fleet, task_id, "started")
        stopped = time.monotonic()
        worker.signal(signal.SIGTERM)  # the main worker: McpWorker passes the warm shutdown to the horse
        final = await poll(client, to, task_id, "failed", "completed", "cancelled", timeout=15)
        FIGURES["rq_worker_sigterm_to_final_s"] = round(time.monotonic() - stopped, 2)
        assert final["status"] == "failed", (final, worker.output())
        assert "interrupted" in final["error"]["message"]
        # The worker's own exit comes after the task's end. It sometimes hangs after "unsubscribing from
        # channel" in the full suite: a known bug, not yet found. The task's guarantee above is the test.
        try:
            worker.wait_exit(45)
        except subprocess.TimeoutExpired:
            output = worker.output()
            worker.stop()
            pytest.xfail(f"known: the rq worker did not exit 45 s after SIGTERM:\n{output[-2000:]}")


async def test_rq_worker_outlives_restarts_of_its_redis(rq_fleet):
    """The worker waits out its broker's restarts, idle or while a job runs, and runs what comes after; the
    job that ran meanwhile ends as its body did (its state is in the database, not in Redis)."""
    to, worker, redis = rq_fleet["url"], rq_fleet["worker"], rq_fleet["redis"]
    if not worker.alive():  # stopped by the test before
        worker.start()
    async with httpx.AsyncClient(timeout=10) as client:
        for down, running in ((0.5, False), (8.0, False), (3.0, True), (8.0, True)):
            running_id = await call(client, to, "sleeper", {"seconds": 2}) if running else None
            if running_id:
                await mark(rq_fleet, running_id, "started")
            redis.stop()
            await asyncio.sleep(down)
            redis.start()
            await asyncio.sleep(1)
            assert worker.alive(), f"the rq worker exited, its Redis down {down} s:\n{worker.output()[-3000:]}"
            if running_id:
                done = await poll(client, to, running_id, "completed", "failed", timeout=60)
                assert done["status"] == "completed", (done, worker.output()[-3000:])
            task_id = await call(client, to, "sleeper", {"seconds": 0.1})
            done = await poll(client, to, task_id, "completed", "failed", timeout=60)
            assert done["status"] == "completed", (done, worker.output()[-3000:])
