"""Several daphne workers on one PostgreSQL database and one Redis, driven over HTTP as a client would.

Runs only against PostgreSQL (``DJANGO_MCP_DATABASE=postgres``): SQLite and the in-memory layer do
not span processes. Starts its own Redis on a free port, so stopping it mid-run disturbs nothing else.
Every process it starts is stopped by PID.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from django_mcp.tasks.conf import TasksSettings
from tests.live.http_listen import EXT, TENANT, Listen
from tests.live.servers import CLUSTER_MARKS, Daphne, Redis, cluster_env
from tests.wire import headers_for, initialize_body, request_body

pytestmark = CLUSTER_MARKS

LEASE = 2.0
FIGURES: dict[str, Any] = {}
FIGURES_FILE = Path(os.environ.get("DJANGO_MCP_LIVE_FIGURES", "/tmp/django-mcp-live-figures.json"))


@pytest.fixture(scope="module")
def cluster(django_db_setup, django_db_blocker):
    from django.db import connection

    with django_db_blocker.unblock():
        db_name = connection.settings_dict["NAME"]
    redis = Redis()
    redis.start()
    env = cluster_env(db_name, redis, LEASE, grace=1)
    workers = {name: Daphne(env) for name in ("A", "B")}
    try:
        for worker in workers.values():
            worker.start()
        yield {"workers": workers, "redis": redis, "env": env, "db": db_name}
    finally:
        for worker in workers.values():
            worker.stop()
        redis.stop()
        FIGURES_FILE.write_text(json.dumps(FIGURES, indent=2))


async def rpc(client: httpx.AsyncClient, url: str, method: str, params: dict | None = None, caps=EXT) -> Any:
    body = request_body(method, params, capabilities=caps)
    response = await client.post(url, content=json.dumps(body), headers={**headers_for(body), **TENANT})
    return response.json()


async def poll(client, url, task_id, *statuses, timeout=20.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        body = await rpc(client, url, "tasks/get", {"taskId": task_id})
        assert "result" in body, body
        if body["result"]["status"] in statuses:
            return body["result"]
        assert time.monotonic() < deadline, body
        await asyncio.sleep(0.05)


async def test_create_on_a_then_get_update_cancel_and_listen_on_b(cluster):
    a, b = cluster["workers"]["A"], cluster["workers"]["B"]
    latencies = []
    async with httpx.AsyncClient(timeout=10) as client:
        for _ in range(10):
            handle = (await rpc(client, a.url, "tools/call", {"name": "slow", "arguments": {"seconds": 60}}))["result"]
            task_id = handle["taskId"]
            async with Listen(client, b.url, {"taskIds": [task_id]}) as stream:
                assert (await stream.frame())["params"]["notifications"] == {"taskIds": [task_id]}
                assert (await stream.frame())["params"]["status"] == "working"  # the snapshot
                assert (await rpc(client, b.url, "tasks/get", {"taskId": task_id}))["result"]["status"] == "working"
                started = time.monotonic()
                ack = await rpc(client, b.url, "tasks/cancel", {"taskId": task_id})
                assert ack["result"]["resultType"] == "complete"
                while (await stream.frame())["params"]["status"] != "cancelled":
                    pass
                latencies.append((time.monotonic() - started) * 1000)
        # Input answered through the other worker.
        task_id = (await rpc(client, a.url, "tools/call", {"name": "two_keys"}))["result"]["taskId"]
        await poll(client, b.url, task_id, "input_required")
        answers = {"a": {"action": "accept"}, "b": {"action": "decline"}}
        await rpc(client, b.url, "tasks/update", {"taskId": task_id, "inputResponses": answers})
        done = await poll(client, a.url, task_id, "completed")
        assert done["result"]["content"][0]["text"] == "a=accept b=decline"
    latencies.sort()
    FIGURES["cross_worker_cancel_ms"] = {
        "p50": round(latencies[len(latencies) // 2], 1),
        "max": round(latencies[-1], 1),
        "n": len(latencies),
    }


async def test_a_tool_list_change_on_a_reaches_a_listen_stream_on_b(cluster):
    a, b = cluster["workers"]["A"], cluster["workers"]["B"]
    async with httpx.AsyncClient(timeout=10) as client, Listen(client, b.url, {"toolsListChanged": True}) as stream:
        assert (await stream.frame())["params"]["notifications"] == {"toolsListChanged": True}
        started = time.monotonic()
        assert (await rpc(client, a.url, "tools/call", {"name": "toggle_tool"}))["result"]["content"][0]["text"] == (
            "toggled"
        )
        frame = await stream.frame()
        FIGURES["list_changed_a_to_b_ms"] = round((time.monotonic() - started) * 1000, 1)
        assert frame["method"] == "notifications/tools/list_changed"
        assert frame["params"]["_meta"] == {"io.modelcontextprotocol/subscriptionId": "live"}


async def test_sigkill_of_the_owner_fails_the_task_after_its_lease(cluster):
    a, b = cluster["workers"]["A"], cluster["workers"]["B"]
    async with httpx.AsyncClient(timeout=10) as client:
        task_id = (await rpc(client, a.url, "tools/call", {"name": "slow", "arguments": {"seconds": 60}}))["result"][
            "taskId"
        ]  # its body runs from the answer on
        killed = time.monotonic()
        a.signal(signal.SIGKILL)
        a.wait_exit(10)
        failed = await poll(client, b.url, task_id, "failed", timeout=LEASE * 5)
        FIGURES["sigkill_to_failed_s"] = round(time.monotonic() - killed, 2)
        assert failed["error"]["code"] == -32603
        assert "owner stopped" in failed["error"]["message"]
        assert time.monotonic() - killed >= LEASE * 0.5  # not before the lease could have lapsed
    a.start()


async def test_sigterm_is_graceful(cluster):
    a, b = cluster["workers"]["A"], cluster["workers"]["B"]
    async with httpx.AsyncClient(timeout=10) as client:
        quick = (await rpc(client, a.url, "tools/call", {"name": "quick"}))["result"]["taskId"]
        await poll(client, b.url, quick, "completed")
        long_id = (await rpc(client, a.url, "tools/call", {"name": "slow", "arguments": {"seconds": 60}}))["result"][
            "taskId"
        ]
        async with Listen(client, a.url, {"toolsListChanged": True}) as stream:
            await stream.frame()  # ack
            stopped = time.monotonic()
            a.signal(signal.SIGTERM)
            final = await stream.frame()
            assert final["id"] == "live" and final["result"]["resultType"] == "complete"
        assert a.wait_exit(15) is not None
        FIGURES["sigterm_to_exit_s"] = round(time.monotonic() - stopped, 2)
        interrupted = (await rpc(client, b.url, "tasks/get", {"taskId": long_id}))["result"]
        assert interrupted["status"] == "failed"
        assert "interrupted" in interrupted["error"]["message"]
        assert (await rpc(client, b.url, "tasks/get", {"taskId": quick}))["result"]["status"] == "completed"
    a.start()


async def test_finished_tasks_survive_a_restart_of_every_worker(cluster):
    a, b = cluster["workers"]["A"], cluster["workers"]["B"]
    async with httpx.AsyncClient(timeout=10) as client:
        ids = [
            (await rpc(client, a.url, "tools/call", {"name": n}))["result"]["taskId"] for n in ("quick", "task_boom")
        ]
        ids.append((await rpc(client, b.url, "tools/call", {"name": "task_rpc_error"}))["result"]["taskId"])
        before = [await poll(client, b.url, i, "completed", "failed") for i in ids]
        a.stop()
        b.stop()
        a.start()
        b.start()
        after = [(await rpc(client, b.url, "tasks/get", {"taskId": i}))["result"] for i in ids]
    strip = [{k: v for k, v in r.items() if k != "_meta"} for r in before]
    assert [{k: v for k, v in r.items() if k != "_meta"} for r in after] == strip


async def test_redis_down_polling_and_cancel_still_work_and_push_resumes(cluster):
    a, b, redis = cluster["workers"]["A"], cluster["workers"]["B"], cluster["redis"]
    async with httpx.AsyncClient(timeout=10) as client:
        redis.stop()
        try:
            done_id = await rpc(client, a.url, "tools/call", {"name": "slow", "arguments": {"seconds": 0.3}})
            done = await poll(client, b.url, done_id["result"]["taskId"], "completed")
            assert done["result"]["content"][0]["text"] == "slept"
            task_id = (await rpc(client, a.url, "tools/call", {"name": "slow", "arguments": {"seconds": 60}}))[
                "result"
            ]["taskId"]
            started = time.monotonic()
            await rpc(client, b.url, "tasks/cancel", {"taskId": task_id})
            await poll(client, b.url, task_id, "cancelled", timeout=LEASE * 3)
            FIGURES["cancel_without_redis_s"] = round(time.monotonic() - started, 2)
        finally:
            redis.start()
        # Push resumes without a restart.
        task_id = (await rpc(client, a.url, "tools/call", {"name": "slow", "arguments": {"seconds": 60}}))["result"][
            "taskId"
        ]
        deadline = time.monotonic() + 20
        while True:
            try:
                async with Listen(client, b.url, {"taskIds": [task_id]}) as stream:
                    ack = await stream.frame()
                    if "error" not in ack:
                        await stream.frame()  # snapshot
                        await rpc(client, a.url, "tasks/cancel", {"taskId": task_id})
                        while (await stream.frame())["params"]["status"] != "cancelled":
                            pass
                        break
            except (EOFError, TimeoutError):
                pass
            assert time.monotonic() < deadline, "listen streams did not recover after Redis came back"
            await asyncio.sleep(0.5)


def _connections(db_name: str) -> int:
    out = subprocess.run(
        [
            "psql",
            "-h",
            "127.0.0.1",
            "-U",
            "postgres",
            "-d",
            "postgres",
            "-tAc",
            f"SELECT count(*) FROM pg_stat_activity WHERE datname = '{db_name}'",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    return int(out.stdout.strip())


async def test_burst_at_the_cap_is_race_free_and_leaks_no_connections(cluster):
    a, b = cluster["workers"]["A"], cluster["workers"]["B"]
    cap_urls = [w.url.replace("/mcp-tasks/", "/mcp-cap/") for w in (a, b)]
    async with httpx.AsyncClient(timeout=30, limits=httpx.Limits(max_connections=100)) as client:
        # Warm both workers up so their pools exist before the baseline is taken.
        for w in (a, b):
            await rpc(client, w.url, "server/discover")
        baseline = _connections(cluster["db"])
        calls = [rpc(client, cap_urls[i % 2], "tools/call", {"name": "slow"}) for i in range(80)]
        answers = await asyncio.gather(*calls)
        created = [r for r in answers if r.get("result", {}).get("resultType") == "task"]
        refused = [r for r in answers if r.get("error", {}).get("data") == {"maxTasks": 25}]
        assert (len(created), len(refused)) == (25, 55)
        for r in created:
            await rpc(client, cap_urls[0], "tasks/cancel", {"taskId": r["result"]["taskId"]})
        burst = await asyncio.gather(
            *[rpc(client, (a, b)[i % 2].url, "tools/call", {"name": "quick"}) for i in range(200)]
        )
        ids = [r["result"]["taskId"] for r in burst]
        for task_id in ids[-10:]:
            await poll(client, b.url, task_id, "completed")
    # Each worker's event loop opens up to TASK_LOOP_CONNECTIONS of its own under a burst (kept, not leaked);
    # the burst's last connections go back to their pools a moment after its last answer.
    bound = baseline + 4 + 2 * TasksSettings().TASK_LOOP_CONNECTIONS
    deadline = time.monotonic() + 10
    while (after := _connections(cluster["db"])) > bound and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
    FIGURES["pg_connections"] = {"before_burst": baseline, "after_burst": after}
    assert after <= bound, FIGURES["pg_connections"]


# -- the handshake era across workers ---------------------------------------------------------------

LEGACY = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


async def _legacy_post(client, url, body, session=None):
    headers = dict(LEGACY)
    if session is not None:
        headers.update({"Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-11-25"})
    return await client.post(url, content=json.dumps(body), headers=headers)


async def test_a_handshake_session_is_served_by_any_worker_and_answers_reach_the_asker(cluster):
    a, b = cluster["workers"]["A"], cluster["workers"]["B"]
    url_a, url_b = a.running.base + "/mcp/", b.running.base + "/mcp/"
    async with httpx.AsyncClient(timeout=10) as client:
        init = initialize_body(capabilities={"elicitation": {}})
        opened = await _legacy_post(client, url_a, init)
        session = opened.headers["mcp-session-id"]
        initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert (await _legacy_post(client, url_b, initialized, session)).status_code == 202
        listed = await _legacy_post(client, url_b, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, session)
        assert "add" in [t["name"] for t in listed.json()["result"]["tools"]]  # served by B from A's session
        # A tool on A asks the client; the answer is POSTed to B and reaches the handler on A.
        call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "greet_me"}}
        headers = {**LEGACY, "Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-11-25"}
        async with client.stream("POST", url_a, content=json.dumps(call), headers=headers) as stream:
            assert stream.headers["content-type"].startswith("text/event-stream")
            messages = []
            async for line in stream.aiter_lines():
                if not line.startswith("data: "):
                    continue
                message = json.loads(line[len("data: ") :])
                messages.append(message)
                if message.get("method") == "elicitation/create":
                    answer = {
                        "jsonrpc": "2.0",
                        "id": message["id"],
                        "result": {"action": "accept", "content": {"name": "Ada"}},
                    }
                    assert (await _legacy_post(client, url_b, answer, session)).status_code == 202
                if message.get("id") == 2:
                    break
        assert messages[-1]["result"]["content"] == [{"type": "text", "text": "Hello Ada"}]
        ended = await client.delete(url_b, headers={"Mcp-Session-Id": session})
        assert ended.status_code == 200
        gone = await _legacy_post(client, url_a, {"jsonrpc": "2.0", "id": 3, "method": "ping"}, session)
        assert gone.status_code == 404


async def test_a_rate_limit_holds_exactly_across_workers(cluster):
    """Two workers count one caller's requests in the shared cache: concurrent requests to both get exactly
    the limit's worth of answers, the rest 429 with Retry-After."""
    env = {**cluster["env"], "DJANGO_MCP_TEST_RATE_LIMIT": "10/h"}  # an hour: no window ends mid-test
    limited = [Daphne(env).start() for _ in range(2)]
    try:
        body = request_body("tools/list", {}, capabilities=EXT)
        headers = {**headers_for(body), **TENANT}
        async with httpx.AsyncClient(timeout=10) as client:
            answers = await asyncio.gather(
                *(client.post(limited[i % 2].url, content=json.dumps(body), headers=headers) for i in range(16))
            )
    finally:
        for worker in limited:
            worker.stop()
    statuses = sorted(a.status_code for a in answers)
    assert statuses == [200] * 10 + [429] * 6, statuses
    assert all(int(a.headers["Retry-After"]) >= 1 for a in answers if a.status_code == 429)
