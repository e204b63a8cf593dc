"""Outages of Redis and PostgreSQL under real daphne workers, driven over HTTP as a client would.

Self-contained: starts a private PostgreSQL cluster (``initdb``/``postgres`` from
``/usr/lib/postgresql/*/bin``, in a temporary directory, on a free port) and a private
``redis-server`` on a free port, so stopping them disturbs nothing else; the machine's PostgreSQL
and Redis are never touched. Every process started here is stopped by PID. Skipped without the
PostgreSQL server binaries or ``redis-server``.

The workers run ``tests.settings`` through a settings module written to the temporary directory,
which takes database settings and extra ``DJANGO_MCP`` keys from the environment.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.live.postgres import PG_BIN, PrivatePostgres
from tests.live.servers import ROOT, Daphne, Redis
from tests.waiting import until
from tests.wire import headers_for, initialize_body, request_body

pytestmark = [
    pytest.mark.live,
    pytest.mark.skipif(not os.path.exists(f"{PG_BIN}/postgres"), reason="needs the PostgreSQL server binaries"),
    pytest.mark.skipif(shutil.which("redis-server") is None, reason="needs redis-server"),
    pytest.mark.timeout(300),
]

EXT = {"extensions": {"io.modelcontextprotocol/tasks": {}}}
TENANT = {"X-Tenant": "outage"}
CHECK = 1.0  # LISTEN_LAYER_CHECK_SECONDS of the workers here
TIMEOUT = 1.0  # LISTEN_LAYER_TIMEOUT_SECONDS
# The README's recommendation for PostgreSQL (check W011): answer 503 within 5 s, resume within seconds.
RECOMMENDED = {
    "CONN_MAX_AGE": 0,
    "CONN_HEALTH_CHECKS": True,
    "OPTIONS": {"pool": {"timeout": 5, "reconnect_timeout": 5}, "connect_timeout": 3},
}
POOL_TIMEOUT = RECOMMENDED["OPTIONS"]["pool"]["timeout"]  # type: ignore[index]
FIGURES: dict[str, Any] = {}
FIGURES_FILE = Path(os.environ.get("DJANGO_MCP_OUTAGE_FIGURES", "/tmp/django-mcp-outage-figures.json"))

SETTINGS = """
import json, os
from tests.settings import *  # noqa: F403

DATABASES["default"].update(json.loads(os.environ.get("OUTAGE_DATABASE", "{}")))  # noqa: F405
DJANGO_MCP = {**DJANGO_MCP, **json.loads(os.environ.get("OUTAGE_DJANGO_MCP", "{}"))}  # noqa: F405
"""


@pytest.fixture(scope="module")
def stack():
    root = Path(tempfile.mkdtemp(prefix="django-mcp-outage-"))
    pg = PrivatePostgres(root)
    redis = Redis()
    try:
        pg.init()
        pg.start()
        import psycopg

        with psycopg.connect(
            host="127.0.0.1", port=pg.port, user="postgres", dbname="postgres", autocommit=True
        ) as conn:
            conn.execute("CREATE DATABASE mcp")
        (root / "outage_settings.py").write_text(SETTINGS)
        redis.start()
        env = {
            "PYTHONPATH": os.pathsep.join([str(root), str(ROOT)]),
            "DJANGO_SETTINGS_MODULE": "outage_settings",
            "DJANGO_MCP_DATABASE": "postgres",
            "PGHOST": "127.0.0.1",
            "PGPORT": str(pg.port),
            "PGUSER": "postgres",
            "PGDATABASE": "mcp",
            "REDIS_URL": f"redis://127.0.0.1:{redis.port}/0",
            "OUTAGE_DATABASE": json.dumps(RECOMMENDED),
            "OUTAGE_DJANGO_MCP": json.dumps(
                {"LISTEN_LAYER_CHECK_SECONDS": CHECK, "LISTEN_LAYER_TIMEOUT_SECONDS": TIMEOUT}
            ),
        }
        subprocess.run(
            [sys.executable, "manage.py", "migrate", "-v0"],
            cwd=ROOT,
            env={**os.environ, **env},
            check=True,
            capture_output=True,
            timeout=180,
        )
        yield {"pg": pg, "redis": redis, "env": env}
    finally:
        redis.stop()
        pg.stop()
        shutil.rmtree(root, ignore_errors=True)
        FIGURES_FILE.write_text(json.dumps(FIGURES, indent=2))


async def rpc(client: httpx.AsyncClient, url: str, method: str, params: dict | None = None) -> httpx.Response:
    body = request_body(method, params, capabilities=EXT)
    return await client.post(url, content=json.dumps(body), headers={**headers_for(body), **TENANT})


class Frames:
    """An SSE response read frame by frame (``None`` once it ended)."""

    def __init__(self, response: httpx.Response) -> None:
        self._lines = response.aiter_lines()

    async def next(self, timeout: float) -> dict[str, Any] | None:
        async def read() -> dict[str, Any] | None:
            async for line in self._lines:
                if line.startswith("data: "):
                    return json.loads(line[6:])
            return None

        return await asyncio.wait_for(read(), timeout)

    async def until_end(self, timeout: float) -> list[dict[str, Any]]:
        frames = []
        deadline = time.monotonic() + timeout
        while (frame := await self.next(deadline - time.monotonic())) is not None:
            frames.append(frame)
        return frames


def listen_body(id: str = "outage") -> dict[str, Any]:
    return request_body("subscriptions/listen", {"notifications": {"toolsListChanged": True}}, id=id, capabilities=EXT)


async def open_listen(client: httpx.AsyncClient, url: str, id: str = "outage") -> tuple[Any, Frames]:
    body = listen_body(id)
    cm = client.stream("POST", url, content=json.dumps(body), headers={**headers_for(body), **TENANT}, timeout=60)
    response = await cm.__aenter__()
    assert response.headers["content-type"] == "text/event-stream"
    return cm, Frames(response)


async def open_get_stream(client: httpx.AsyncClient, url: str) -> tuple[Any, Frames]:
    """A handshake-era session (initialize on this worker) and its GET stream."""
    init = initialize_body(client="outage")
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream", **TENANT}
    response = await client.post(url, content=json.dumps(init), headers=headers)
    assert response.status_code == 200, response.text
    session = {"Mcp-Session-Id": response.headers["Mcp-Session-Id"], "MCP-Protocol-Version": "2025-11-25"}
    await client.post(
        url,
        content=json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        headers={**headers, **session},
    )
    cm = client.stream("GET", url, headers={"Accept": "text/event-stream", **session, **TENANT}, timeout=60)
    response = await cm.__aenter__()
    assert response.status_code == 200 and response.headers["content-type"] == "text/event-stream"
    return cm, Frames(response)


def _unavailable(frame: dict[str, Any] | None) -> bool:
    return (
        frame is not None
        and frame.get("error", {}).get("code") == -32603
        and frame["error"]["message"].startswith("Notifications are unavailable")
    )


def _log_records(text: str) -> int:
    """Log records (daphne's format starts each with a timestamp), tracebacks aside."""
    return len(re.findall(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", text, flags=re.MULTILINE))


def _log_lines(text: str) -> int:
    return len([line for line in text.splitlines() if line.strip()])


async def test_redis_outage_ends_listen_and_get_streams_with_the_error_logs_little_and_recovers(stack):
    redis = stack["redis"]
    a, b = Daphne(stack["env"], quiet=True), Daphne(stack["env"], quiet=True)
    try:
        a.start()
        b.start()
        async with httpx.AsyncClient(timeout=30) as client:
            listen_cm, listen = await open_listen(client, b.url)
            assert (await listen.next(10))["method"] == "notifications/subscriptions/acknowledged"
            get_cm, get = await open_get_stream(client, a.url)
            # Pushes work across workers before the outage.
            assert (await rpc(client, a.url, "tools/call", {"name": "toggle_tool"})).status_code == 200
            assert (await listen.next(10))["method"] == "notifications/tools/list_changed"
            assert (await get.next(10))["method"] == "notifications/tools/list_changed"
            await asyncio.sleep(0.5)  # let the second change of the toggle arrive too
            logged = {w: len(w.log()) for w in (a, b)}

            redis.stop()
            stopped = time.monotonic()
            # A busy notification source on A for the whole outage: every publish fails.
            publishes = 0

            async def busy(seconds: float) -> None:
                nonlocal publishes
                end = time.monotonic() + seconds
                while time.monotonic() < end:
                    response = await rpc(client, a.url, "tools/call", {"name": "toggle_tool"})
                    assert response.status_code == 200  # the tool's own work never fails with the layer
                    publishes += 2

            source = asyncio.ensure_future(busy(6))
            ends = await asyncio.gather(listen.until_end(CHECK + TIMEOUT + 5), get.until_end(CHECK + TIMEOUT + 5))
            detected = time.monotonic() - stopped
            for frames in ends:
                assert frames and _unavailable(frames[-1]), frames
            assert ends[0][-1]["id"] == "outage"
            assert "id" not in ends[1][-1]  # the GET stream has no request to answer
            # Listening again during the outage is refused at once, not left open and silent.
            started = time.monotonic()
            retry_cm, retry = await open_listen(client, b.url, id="retry")
            assert _unavailable(await retry.next(TIMEOUT + 5))
            refused_in = time.monotonic() - started
            await retry_cm.__aexit__(None, None, None)
            await source
            outage = {w: w.log()[logged[w] :] for w in (a, b)}
            records = {name: _log_records(outage[w]) for name, w in (("A", a), ("B", b))}
            lines = {name: _log_lines(outage[w]) for name, w in (("A", a), ("B", b))}

            redis.start()
            restarted = time.monotonic()
            deadline = restarted + 30
            while True:
                cm, frames = await open_listen(client, b.url, id="again")
                first = await frames.next(10)
                if first is not None and first.get("method") == "notifications/subscriptions/acknowledged":
                    break
                await cm.__aexit__(None, None, None)
                assert time.monotonic() < deadline, "listen streams did not recover after Redis came back"
                await asyncio.sleep(0.2)
            resumed = time.monotonic() - restarted
            assert (await rpc(client, a.url, "tools/call", {"name": "toggle_tool"})).status_code == 200
            assert (await frames.next(10))["method"] == "notifications/tools/list_changed"
            await cm.__aexit__(None, None, None)
            for ctx in (listen_cm, get_cm):
                await ctx.__aexit__(None, None, None)
    finally:
        a.stop()
        b.stop()
        if redis.proc is None:
            redis.start()
    FIGURES["redis_outage"] = {
        "streams_ended_after_s": round(detected, 2),
        "relisten_refused_in_s": round(refused_in, 2),
        "relisten_works_after_restart_s": round(resumed, 2),
        "failed_publishes_on_A": publishes,
        "log_records_during_outage": records,
        "log_lines_during_outage": lines,
    }
    assert detected < CHECK + TIMEOUT + 3
    # Bounded: a few records per worker for the whole outage (a traceback the first time each), then at
    # most one a minute per kind; not one per failed publish (before: one traceback each).
    assert publishes > 50 and max(records.values()) <= 10 and max(lines.values()) <= 300, (publishes, records, lines)


async def test_a_short_redis_restart_ends_the_streams_that_may_have_missed_notifications(stack):
    redis = stack["redis"]
    env = {**stack["env"], "OUTAGE_DJANGO_MCP": json.dumps({"LISTEN_LAYER_CHECK_SECONDS": 300})}
    b = Daphne(env, quiet=True)  # checks too rare to notice: only the reconnection tells
    try:
        b.start()
        async with httpx.AsyncClient(timeout=30) as client:
            cm, listen = await open_listen(client, b.url)
            assert (await listen.next(10))["method"] == "notifications/subscriptions/acknowledged"
            redis.stop()
            redis.start()  # within a second: what was published meanwhile is lost
            frames = await listen.until_end(15)
            assert frames and _unavailable(frames[-1]), frames
            assert "reconnected" in frames[-1]["error"]["message"]
            await cm.__aexit__(None, None, None)
    finally:
        b.stop()


async def test_database_outage_answers_503_within_the_pool_timeout_and_recovers_within_seconds(stack):
    pg = stack["pg"]
    worker = Daphne(stack["env"], quiet=True)
    try:
        worker.start()
        async with httpx.AsyncClient(timeout=120) as client:
            created = (await rpc(client, worker.url, "tools/call", {"name": "quick"})).json()
            task_id = created["result"]["taskId"]
            deadline = time.monotonic() + 20
            while (await rpc(client, worker.url, "tasks/get", {"taskId": task_id})).json()["result"]["status"] != (
                "completed"
            ):
                assert time.monotonic() < deadline
                await asyncio.sleep(0.05)

            pg.stop()
            answers = []
            for _ in range(3):
                started = time.monotonic()
                response = await rpc(client, worker.url, "tasks/get", {"taskId": task_id})
                answers.append((time.monotonic() - started, response))
            for elapsed, response in answers:
                assert response.status_code == 503, response.text
                error = response.json()["error"]
                assert error["code"] == -32603 and error["message"].startswith("Database unavailable")
                assert elapsed <= POOL_TIMEOUT + 2, elapsed

            pg.start()
            back = time.monotonic()
            deadline = back + 30
            while True:
                response = await rpc(client, worker.url, "tasks/get", {"taskId": task_id})
                if response.status_code == 200:
                    break
                assert time.monotonic() < deadline, "service did not resume after PostgreSQL came back"
                await asyncio.sleep(0.1)
            resumed = time.monotonic() - back
            assert response.json()["result"]["status"] == "completed"
    finally:
        worker.stop()
        if pg.proc is None:
            pg.start()
    FIGURES["database_outage"] = {
        "database": RECOMMENDED,
        "answer_503_s": [round(elapsed, 2) for elapsed, _ in answers],
        "resumed_after_restart_s": round(resumed, 2),
    }
    assert resumed <= 6, resumed


async def test_live_tasks_keep_their_outcome_through_an_outage_longer_than_the_lease(stack):
    """Two workers, PostgreSQL stopped for 2.5 leases while tasks run and report progress on worker A.

    Worker B served requests before (its maintenance ran and lost the database too) and is polled
    after: a lapsed lease then says nothing of A, which renews first. Every task must end completed
    with its body's result, none "Task owner stopped" (13 of 34 were, after a 40 s outage).
    """
    pg = stack["pg"]
    lease = 2.0
    outage = lease * float(os.environ.get("DJANGO_MCP_OUTAGE_LEASES", "2.5"))  # longer for a campaign
    tasks_settings = {
        "LISTEN_LAYER_CHECK_SECONDS": CHECK,
        "LISTEN_LAYER_TIMEOUT_SECONDS": TIMEOUT,
        "TASK_LEASE_SECONDS": lease,
        "TASK_LEASE_RENEW_SECONDS": 0.5,
    }
    env = {**stack["env"], "OUTAGE_DJANGO_MCP": json.dumps(tasks_settings)}
    a, b = Daphne(env, quiet=True), Daphne(env, quiet=True)
    try:
        a.start()
        b.start()
        async with httpx.AsyncClient(timeout=120) as client:
            created = [
                (
                    await rpc(client, a.url, "tools/call", {"name": "slow", "arguments": {"seconds": 6, "steps": 12}})
                ).json()["result"]["taskId"]
                for _ in range(8)
            ]
            for task_id in created:  # B serves too: its maintenance starts, and will see the outage
                assert (await rpc(client, b.url, "tasks/get", {"taskId": task_id})).json()["result"]["status"] == (
                    "working"
                )
            # Each worker's maintenance has run (it writes its process's row at the end of a round).
            pids = ", ".join(str(worker.running.proc.pid) for worker in (a, b))
            seen = f"SELECT count(*) FROM django_mcp_node WHERE pid IN ({pids})"
            await until(lambda: pg.execute(seen, database="mcp") == [(2,)], what="both workers' maintenance")
            pg.stop()
            await asyncio.sleep(outage)  # every lease lapses; the bodies' progress meets the outage
            pg.start()
            outcomes: dict[str, dict[str, Any]] = {}
            deadline = time.monotonic() + 60
            while len(outcomes) < len(created):
                assert time.monotonic() < deadline, f"still running: {set(created) - set(outcomes)}"
                for task_id in set(created) - set(outcomes):
                    response = await rpc(client, b.url, "tasks/get", {"taskId": task_id})
                    if response.status_code != 200:
                        continue  # B's pool reconnecting
                    task = response.json()["result"]
                    if task["status"] not in ("working", "input_required"):
                        outcomes[task_id] = task
                await asyncio.sleep(0.2)
    finally:
        a.stop()
        b.stop()
        if pg.proc is None:
            pg.start()
    statuses = {task_id: task["status"] for task_id, task in outcomes.items()}
    FIGURES["tasks_through_database_outage"] = {
        "lease_s": lease,
        "outage_s": outage,
        "tasks": len(created),
        "completed": sum(s == "completed" for s in statuses.values()),
    }
    assert set(statuses.values()) == {"completed"}, [t.get("error") for t in outcomes.values()]
    assert {t["result"]["content"][0]["text"] for t in outcomes.values()} == {"slept"}


async def test_while_the_database_is_known_down_every_concurrent_request_is_answered_within_a_second(stack):
    """16 concurrent requests took p50 10-15 s and up to 20 s to hear 'database unavailable', queueing
    on the pool one timeout after another. Once the outage is known, each answers within ~1 s."""
    pg = stack["pg"]
    worker = Daphne(stack["env"], quiet=True)
    try:
        worker.start()
        async with httpx.AsyncClient(timeout=120) as client:
            task_id = (await rpc(client, worker.url, "tools/call", {"name": "quick"})).json()["result"]["taskId"]
            pg.stop()
            first = await rpc(client, worker.url, "tasks/get", {"taskId": task_id})  # finds out (pool timeout)
            assert first.status_code == 503

            async def timed(method: str, params: dict[str, Any]) -> tuple[float, httpx.Response]:
                started = time.monotonic()
                response = await rpc(client, worker.url, method, params)
                return time.monotonic() - started, response

            calls = [("tasks/get", {"taskId": task_id})] * 12 + [("tools/call", {"name": "quick"})] * 4
            answers = await asyncio.gather(*(timed(m, p) for m, p in calls))
    finally:
        worker.stop()
        pg.start()
    elapsed = sorted(seconds for seconds, _ in answers)
    FIGURES["known_outage_16_concurrent_s"] = {"p50": round(elapsed[8], 2), "max": round(elapsed[-1], 2)}
    for _, response in answers:
        assert response.status_code == 503, response.text
        assert response.json()["error"]["message"].startswith("Database unavailable")
    assert elapsed[-1] <= 2.0, elapsed


async def test_a_fleet_worker_outlives_an_outage_of_its_database_and_runs_what_comes_after(stack):
    """``db_worker`` exits when its database stops while it is idle (and nothing brings it back: the fleet's
    tasks then wait for nobody); ``mcp_db_worker`` waits the outage out and runs the next task."""
    from tests.live.fleet import DB_WORKER, DbWorker

    pg, env = stack["pg"], stack["env"]
    plain = DbWorker("db_worker", env)
    surviving = DbWorker("mcp_db_worker", env, ["mcp_db_worker", *DB_WORKER[1:]])
    web = Daphne(env, quiet=True)
    try:
        web.start()
        plain.start()
        surviving.start()
        await until(  # both polling, idle
            lambda: all("Starting worker" in worker.output() for worker in (plain, surviving)),
            what="both workers to start",
        )
        pg.stop()
        await asyncio.sleep(POOL_TIMEOUT + 3)  # past the pool's wait: the worker's query fails
        pg.start()
        deadline = time.monotonic() + 15
        while plain.alive():
            assert time.monotonic() < deadline, "db_worker kept running through the outage: the premise changed"
            await asyncio.sleep(0.1)
        assert surviving.alive(), surviving.output()[-2000:]
        fleet = web.running.base + "/mcp-fleet/"
        async with httpx.AsyncClient(timeout=30) as client:
            deadline = time.monotonic() + 30
            while (
                created := await rpc(client, fleet, "tools/call", {"name": "sleeper", "arguments": {"seconds": 0.1}})
            ).status_code != 200:
                assert time.monotonic() < deadline, created.text  # the web worker's pool reconnects first
                await asyncio.sleep(0.2)
            task_id = created.json()["result"]["taskId"]
            deadline = time.monotonic() + 30
            while (got := (await rpc(client, fleet, "tasks/get", {"taskId": task_id})).json())["result"][
                "status"
            ] != "completed":
                assert got["result"]["status"] == "working" and time.monotonic() < deadline, (
                    got,
                    surviving.output()[-2000:],
                )
                await asyncio.sleep(0.1)
        assert "starts again" in surviving.output()
    finally:
        plain.stop()
        surviving.stop()
        web.stop()
        if pg.proc is None:
            pg.start()
