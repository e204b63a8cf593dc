"""The worker fleet on Celery, live: a daphne web process and a Celery worker (threads pool) on the suite's
database and a private Redis channel layer, with RabbitMQ and with Redis as the broker.

Task bodies of /mcp-fleet/ (tests/fleetapp) go to the "celery" Django Tasks backend
(``django_mcp.tasks.celery_backend.CeleryBackend``, queue "mcp"); ``celery -A tests.celery_app worker``
runs them. What the db_worker and rq fleets guarantee holds here too: cancel reaches a running body, a
question mid-flight is answered, the body runs as its caller with the trace linked, and a SIGKILL of the
worker fails its task within the lease. Every process started here is stopped by PID.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.live.fleet import EXT, TENANT, DbWorker, call, mark, poll, rpc
from tests.live.servers import CLUSTER_MARKS, ROOT, Redis, cluster_env, start
from tests.wire import headers_for, request_body

pytestmark = CLUSTER_MARKS

LEASE = 2.0
GRACE = 1.0
RABBITMQ = "amqp://guest:guest@127.0.0.1:5672//"
CELERY = ("-m", "celery", "-A", "tests.celery_app")
WORKER = ["worker", "-Q", "mcp", "--pool", "threads", "--concurrency", "8", "-l", "info"]
WORKER += ["--without-gossip", "--without-mingle", "--without-heartbeat"]


def rabbitmq_up() -> bool:
    import socket

    with socket.socket() as probe:
        probe.settimeout(1)
        return probe.connect_ex(("127.0.0.1", 5672)) == 0


@pytest.fixture(scope="module", params=["rabbitmq", "redis"])
def celery_fleet(request: pytest.FixtureRequest, django_db_setup: Any, django_db_blocker: Any) -> Iterator[dict]:
    from django.db import connection

    if request.param == "rabbitmq" and not rabbitmq_up():
        pytest.fail("RabbitMQ is not listening on 127.0.0.1:5672 (.ci/run starts it: rabbitmq-server -detached)")
    with django_db_blocker.unblock():
        db_name = connection.settings_dict["NAME"]
    redis = Redis()
    redis.start()
    broker = RABBITMQ if request.param == "rabbitmq" else f"redis://127.0.0.1:{redis.port}/2"
    marks = Path(tempfile.mkdtemp(prefix="celery-marks-"))
    spans = Path(tempfile.mkdtemp(prefix="celery-spans-"))
    env = {
        **cluster_env(db_name, redis, LEASE, GRACE),
        "DJANGO_MCP_TEST_CELERY_BROKER": broker,
        "DJANGO_MCP_TEST_FLEET_BACKEND": "celery",
        "FLEET_MARKS": str(marks),
        "DJANGO_MCP_TEST_OTEL_DIR": str(spans),
        "PYTHONUNBUFFERED": "1",
    }
    # Jobs a killed worker of an earlier run left on the shared RabbitMQ queue would name tasks of no one.
    subprocess.run(
        [sys.executable, *CELERY, "purge", "-f", "-Q", "mcp"],
        cwd=ROOT,
        env={**os.environ, **env},
        capture_output=True,
        timeout=60,
    )
    web = None
    worker = DbWorker("celery", env, WORKER, program=CELERY)
    try:
        web = start(["-m", "daphne", "-b", "127.0.0.1", "-p", "{port}", "tests.asgi:application"], env=env)
        worker.start()
        yield {"url": web.base + "/mcp-fleet/", "worker": worker, "marks": marks, "spans": spans, "web": web}
    finally:
        worker.stop()
        if web is not None:
            web.stop()
        redis.stop()
        shutil.rmtree(marks, ignore_errors=True)
        shutil.rmtree(spans, ignore_errors=True)


async def test_celery_runs_a_body_and_cancel_reaches_it(celery_fleet: dict) -> None:
    to, worker = celery_fleet["url"], celery_fleet["worker"]
    async with httpx.AsyncClient(timeout=10) as client:
        task_id = await call(client, to, "sleeper", {"seconds": 0.2})
        done = await poll(client, to, task_id, "completed", "failed", timeout=30)
        assert done["status"] == "completed", (done, worker.output()[-3000:])
        _, pid = await mark(celery_fleet, task_id, "started")
        assert pid == worker.pid  # the threads pool: the worker's own process
        task_id = await call(client, to, "sleeper", {"seconds": 60})
        await mark(celery_fleet, task_id, "started")
        assert "result" in await rpc(client, to, "tasks/cancel", {"taskId": task_id})
        await mark(celery_fleet, task_id, "cancelled", timeout=10)
        assert (await poll(client, to, task_id, "cancelled"))["status"] == "cancelled"


async def test_celery_a_question_mid_flight_is_answered(celery_fleet: dict) -> None:
    to = celery_fleet["url"]
    async with httpx.AsyncClient(timeout=10) as client:
        task_id = await call(client, to, "heavy", {"text": "celery"})
        waiting = await poll(client, to, task_id, "input_required")
        key = next(iter(waiting["inputRequests"]))
        answers = {key: {"action": "accept", "content": {"ok": True}}}
        assert "result" in await rpc(client, to, "tasks/update", {"taskId": task_id, "inputResponses": answers})
        done = await poll(client, to, task_id, "completed")
        _, pid = await mark(celery_fleet, task_id, "started")
        assert done["result"]["content"][0]["text"] == f"heavy celery pid={pid} answered=accept"


def signed_in_cookie(username: str) -> str:
    """A session of a new Django user, committed: what a browser signed in to the site would send."""
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
    from django.contrib.auth.models import User
    from django.contrib.sessions.backends.db import SessionStore

    user = User.objects.create_user(username, password="pw")
    session = SessionStore()
    session[SESSION_KEY] = str(user.pk)
    session[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
    session[HASH_SESSION_KEY] = user.get_session_auth_hash()
    session.save()
    return f"sessionid={session.session_key}"


async def test_celery_runs_the_body_as_its_caller_with_the_trace_linked(celery_fleet: dict) -> None:
    from asgiref.sync import sync_to_async

    from tests.otel_export import read

    to = celery_fleet["url"]
    cookie = await sync_to_async(signed_in_cookie)(f"ada-{os.getpid()}-{time.monotonic_ns()}")
    client_trace = "c1" * 16
    body = request_body(
        "tools/call", {"name": "whoami"}, capabilities=EXT, traceparent=f"00-{client_trace}-{'d' * 16}-01"
    )
    async with httpx.AsyncClient(timeout=10) as client:
        headers = {**headers_for(body), **TENANT, "Cookie": cookie}
        response = await client.post(to, content=json.dumps(body), headers=headers)
        task_id = response.json()["result"]["taskId"]
        done = await poll(client, to, task_id, "completed", timeout=30)
    seen = json.loads(done["result"]["content"][0]["text"])
    assert seen["user"].startswith("ada-"), seen  # the worker rebuilt the caller's Django user
    assert seen["protocolVersion"] == "2026-07-28" and "elicitation" in seen["capabilities"], seen
    assert seen["pid"] == celery_fleet["worker"].pid
    spans: list[dict] = []
    for _ in range(100):
        spans = read(celery_fleet["spans"])
        if any(s["name"] == "task whoami" and s["attributes"].get("mcp.task.id") == task_id for s in spans):
            break
        await asyncio.sleep(0.05)
    creation = next(s for s in spans if s["name"] == "tools/call whoami" and s["trace_id"] == client_trace)
    run = next(s for s in spans if s["name"] == "task whoami" and s["attributes"].get("mcp.task.id") == task_id)
    assert run["links"] == [creation["span_id"]] and run["pid"] == celery_fleet["worker"].pid


async def test_celery_sigkill_of_the_worker_fails_the_task_within_the_lease(celery_fleet: dict) -> None:
    to, worker = celery_fleet["url"], celery_fleet["worker"]
    async with httpx.AsyncClient(timeout=10) as client:
        task_id = await call(client, to, "sleeper", {"seconds": 60})
        await mark(celery_fleet, task_id, "started")
        killed = time.monotonic()
        worker.signal(signal.SIGKILL)
        worker.wait_exit(10)
        failed = await poll(client, to, task_id, "failed", timeout=LEASE * 5)
        assert failed["error"]["code"] == -32603
        assert "owner stopped" in failed["error"]["message"]
        assert time.monotonic() - killed <= LEASE * 3
    worker.stop()
    worker.start()
