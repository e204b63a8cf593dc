"""The task monitor across two server processes: one's monitor sees the other's tasks, process and streams.

Two daphne processes serve one SQLite file and a private Redis (shared cache and channel layer), as a
team's two web workers would. A staff member signs in to the first one's admin; everything else happens
on the second.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest

from tests.live.http_listen import EXT, Listen
from tests.live.servers import Redis, server_process, sqlite_project
from tests.waiting import until
from tests.wire import headers_for, request_body

pytestmark = [
    pytest.mark.live,
    # Servers of their own on a SQLite file of their own, whatever the leg: once per CI run is enough.
    pytest.mark.skipif(os.environ.get("DJANGO_MCP_DATABASE", "sqlite") != "sqlite", reason="its own SQLite"),
    pytest.mark.skipif(shutil.which("redis-server") is None, reason="needs redis-server"),
    pytest.mark.timeout(180),
]

DAPHNE = ["-m", "daphne", "-b", "127.0.0.1", "-p", "{port}", "tests.asgi:application"]
MONITOR = "/admin/django_mcp/taskmonitor/"
LEASE = 3.0  # seconds: each process writes its row every second (a third of it)


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    redis = Redis()
    redis.start()
    try:
        database = tmp_path_factory.mktemp("monitor-two") / "db.sqlite3"
        project = sqlite_project(database, "ada", "pw-for-ada", redis_url=f"redis://127.0.0.1:{redis.port}/0")
        project["DJANGO_MCP_TEST_LEASE"] = str(LEASE)
        with server_process(DAPHNE, env=project) as first, server_process(DAPHNE, env=project) as second:
            yield first, second
    finally:
        redis.stop()


async def signed_in(base: str) -> httpx.AsyncClient:
    client = httpx.AsyncClient(base_url=base, follow_redirects=True, timeout=10)
    login = await client.get("/admin/login/")
    csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', login.text)
    assert csrf is not None
    data = {"username": "ada", "password": "pw-for-ada", "csrfmiddlewaretoken": csrf.group(1)}
    assert (await client.post("/admin/login/?next=/admin/", data=data)).url.path == "/admin/"
    return client


async def rpc(base: str, method: str, params: dict[str, Any]) -> dict[str, Any]:
    body = request_body(method, params, capabilities=EXT)
    async with httpx.AsyncClient(timeout=10) as client:
        response = await client.post(f"{base}/mcp-tasks/", content=json.dumps(body), headers=headers_for(body))
    return response.json()["result"]  # type: ignore[no-any-return]


async def changes(client: httpx.AsyncClient) -> AsyncIterator[dict[str, Any]]:
    """Each task change the monitor's stream tells, as it comes."""
    async with client.stream("GET", f"{MONITOR}events/", timeout=30) as stream:
        assert stream.headers["content-type"] == "text/event-stream"
        async for line in stream.aiter_lines():
            if line.startswith("data: "):
                for task in json.loads(line[6:])["tasks"]:
                    yield task


async def test_a_monitor_on_one_process_follows_the_tasks_of_another(servers):
    first, second = servers
    staff = await signed_in(first)
    seen: dict[str, dict[str, Any]] = {}

    async def follow() -> None:
        async for task in changes(staff):
            seen.setdefault(task["taskId"], {}).update(task)

    following = asyncio.create_task(follow())
    try:
        # The second process reads the open monitor's mark at most every 2 s: it tells its changes once
        # it has read it. Until then its tasks go untold; one is created each second until one is told.
        created: list[str] = []

        async def told() -> bool:
            if not any(task_id in seen for task_id in created):
                created.append((await rpc(second, "tools/call", {"name": "quick", "arguments": {}}))["taskId"])
            return any(task_id in seen for task_id in created)

        for _ in range(10):
            if await told():
                break
            await asyncio.sleep(1)  # a step of the loop above: the next task, not a wait for an outcome
        told_id = next(task_id for task_id in created if task_id in seen)
        await until(
            lambda: seen[told_id]["status"] == "completed", 10, f"the other process's task completing (told: {seen})"
        )
        assert seen[told_id]["tool"] == "quick" and seen[told_id]["server"] == "mcp_tasks"
        slow = (await rpc(second, "tools/call", {"name": "slow", "arguments": {"seconds": 60}}))["taskId"]
        await until(lambda: seen.get(slow, {}).get("status") == "working", 10, "a new task, at once")
        await rpc(second, "tasks/cancel", {"taskId": slow})
        await until(lambda: seen[slow]["status"] == "cancelled", 10, "its cancellation")
    finally:
        following.cancel()
        await asyncio.gather(following, return_exceptions=True)
        await staff.aclose()


def web_servers(html: str) -> set[str]:
    """The pids of the web servers the page lists."""
    return set(re.findall(r"web server: <code>[^<]*</code>, pid (\d+)", html[html.index('id="monitor-workers"') :]))


def listen_streams(html: str) -> str | None:
    found = re.search(r'Listen streams open</th><td class="figure">(\d+)</td>', html)
    return found.group(1) if found else None


async def test_the_monitor_lists_both_processes_and_the_other_s_listen_streams(servers):
    first, second = servers
    staff = await signed_in(first)
    await rpc(first, "tools/list", {})  # the first process serves its endpoint too (its tasks' upkeep starts)
    slow = (await rpc(second, "tools/call", {"name": "slow", "arguments": {"seconds": 60}}))["taskId"]
    page = {"html": ""}

    async def shows(streams: str) -> bool:
        page["html"] = (await staff.get(MONITOR)).text
        return listen_streams(page["html"]) == streams and len(web_servers(page["html"])) == 2

    try:
        async with httpx.AsyncClient(timeout=30) as client, Listen(client, f"{second}/mcp-tasks/", {"taskIds": [slow]}):
            for _ in range(50):  # each process writes its row every second
                if await shows("1"):
                    break
                await asyncio.sleep(0.2)  # a step of the poll: the page is read again
            assert listen_streams(page["html"]) == "1" and len(web_servers(page["html"])) == 2, page["html"]
            assert 'class="silent"' not in page["html"]
        for _ in range(50):  # the stream closed: the next row the second process writes says so
            if await shows("0"):
                break
            await asyncio.sleep(0.2)
        assert listen_streams(page["html"]) == "0", page["html"]
    finally:
        await rpc(second, "tasks/cancel", {"taskId": slow})
        await staff.aclose()
