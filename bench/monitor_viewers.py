"""What open task monitors cost the endpoint: ``tasks/get`` and task creation with none, then ``--viewers``
live monitors open (each a staff session's event stream), then none again, in one run on one daphne.

    .venv/bin/python bench/monitor_viewers.py [--viewers 10] [--concurrency 8] [--seconds 8]

Creation runs 1 s per phase (the test server keeps at most 1,000 tasks). The test project (``tests.asgi``:
SQLite in a temporary directory, the in-memory channel layer) under one
daphne on 127.0.0.1; closed-loop clients over httpx. Prints each phase's req/s and the ratio of the
phase with monitors open to the mean of the two without (the issue's bar: 0.95 or more).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.live.servers import sqlite_project, start  # noqa: E402
from tests.wire import headers_for, request_body  # noqa: E402

EXT = {"extensions": {"io.modelcontextprotocol/tasks": {}}}  # (importing django_mcp.tasks needs settings)


async def rpc(client: httpx.AsyncClient, method: str, params: dict[str, Any]) -> dict[str, Any]:
    body = request_body(method, params, capabilities=EXT)
    response = await client.post("/mcp-tasks/", content=json.dumps(body), headers=headers_for(body))
    return response.json()


async def load(base: str, scenario: str, task_id: str, concurrency: int, seconds: float) -> float:
    """Closed-loop req/s of ``scenario`` over ``seconds``."""
    done = 0
    stop = time.monotonic() + seconds

    async def client() -> None:
        nonlocal done
        async with httpx.AsyncClient(base_url=base, timeout=30) as http:
            while time.monotonic() < stop:
                if scenario == "tasks/get":
                    answer = await rpc(http, "tasks/get", {"taskId": task_id})
                else:
                    answer = await rpc(http, "tools/call", {"name": "quick", "arguments": {}})
                assert "result" in answer, answer
                done += 1

    await asyncio.gather(*(client() for _ in range(concurrency)))
    return done / seconds


async def open_monitor(base: str, username: str, password: str, opened: asyncio.Event, count: list[int]) -> None:
    """A staff user's live monitor: signed in through the admin's login form, its event stream read."""
    async with httpx.AsyncClient(base_url=base, timeout=None) as http:
        login = await http.get("/admin/login/")
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', login.text)
        assert token, login.text[:300]
        form = {"csrfmiddlewaretoken": token.group(1), "username": username, "password": password}
        await http.post("/admin/login/", data=form, headers={"Referer": f"{base}/admin/login/"})
        async with http.stream("GET", "/admin/django_mcp/taskmonitor/events/") as stream:
            assert stream.status_code == 200, stream.status_code
            count[0] += 1
            if count[0] >= count[1]:
                opened.set()
            async for _ in stream.aiter_bytes():
                pass


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="monitor-viewers-"))
    env = sqlite_project(work / "db.sqlite3", "ada", "pw-for-ada")
    server = start(["-m", "daphne", "-v", "0", "-b", "127.0.0.1", "-p", "{port}", "tests.asgi:application"], env=env)
    try:
        async with httpx.AsyncClient(base_url=server.base) as http:
            task_id = (await rpc(http, "tools/call", {"name": "quick", "arguments": {}}))["result"]["taskId"]
        results: dict[str, dict[str, float]] = {}
        for scenario in ("tasks/get", "create"):
            # Creation fills the server's cap (1,000 retained tasks): three phases of 1 s stay below it.
            seconds = args.seconds if scenario == "tasks/get" else min(args.seconds, 1.0)
            phases = {}
            phases["none"] = await load(server.base, scenario, task_id, args.concurrency, seconds)
            opened, count = asyncio.Event(), [0, args.viewers]
            viewers = [
                asyncio.ensure_future(open_monitor(server.base, "ada", "pw-for-ada", opened, count))
                for _ in range(args.viewers)
            ]
            await asyncio.wait_for(opened.wait(), 30)
            phases["open"] = await load(server.base, scenario, task_id, args.concurrency, seconds)
            for viewer in viewers:
                viewer.cancel()
            await asyncio.gather(*viewers, return_exceptions=True)
            phases["none again"] = await load(server.base, scenario, task_id, args.concurrency, seconds)
            phases["ratio"] = phases["open"] / statistics.mean([phases["none"], phases["none again"]])
            results[scenario] = phases
            print(
                f"{scenario:10} none {phases['none']:7.1f}  {args.viewers} monitors open {phases['open']:7.1f}  "
                f"none again {phases['none again']:7.1f} req/s   open / without: {phases['ratio']:.3f}"
            )
        return {"viewers": args.viewers, "concurrency": args.concurrency, "seconds": args.seconds, **results}
    finally:
        server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--viewers", type=int, default=10)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--json")
    args = parser.parse_args()
    result = asyncio.run(main_async(args))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
