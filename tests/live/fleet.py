"""What the live fleet tests share: a worker process by PID, and a client's calls of /mcp-fleet/."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from typing import Any

import httpx

from tests.live.servers import ROOT, read_log, terminate
from tests.wire import headers_for, request_body

EXT = {"extensions": {"io.modelcontextprotocol/tasks": {}}, "elicitation": {}}
TENANT = {"X-Tenant": "live"}

DB_WORKER = ["db_worker", "--backend", "fleet", "--queue-name", "mcp", "--interval", "0.1"]
DB_WORKER += ["--no-startup-delay", "--no-reload"]


class DbWorker:
    """One worker process (``manage.py db_worker --backend fleet --queue-name mcp`` by default); by PID only."""

    def __init__(
        self, name: str, env: dict[str, str], command: list[str] = DB_WORKER, program: tuple[str, ...] = ("manage.py",)
    ) -> None:
        self.name, self.env, self.command, self.program = name, env, command, program
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        log = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(
            [sys.executable, *self.program, *self.command],
            cwd=ROOT,
            env={**os.environ, **self.env},
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.proc.log = log  # type: ignore[attr-defined]

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def signal(self, sig: int) -> None:
        os.kill(self.pid, sig)

    def wait_exit(self, timeout: float) -> int:
        assert self.proc is not None
        return self.proc.wait(timeout=timeout)

    def output(self) -> str:
        log = getattr(self.proc, "log", None)
        return "" if log is None else read_log(log)

    def stop(self) -> None:
        if self.proc is None:
            return
        terminate(self.proc, timeout=10)
        log = getattr(self.proc, "log", None)
        if log is not None:
            log.close()
        self.proc = None


async def rpc(client: httpx.AsyncClient, to: str, method: str, params: dict | None = None) -> Any:
    body = request_body(method, params, capabilities=EXT)
    response = await client.post(to, content=json.dumps(body), headers={**headers_for(body), **TENANT})
    return response.json()


async def call(client, to, tool, arguments=None) -> str:
    body = await rpc(client, to, "tools/call", {"name": tool, "arguments": arguments or {}})
    assert body["result"]["status"] == "working", body
    assert body["result"]["statusMessage"] == "Queued for a worker"
    return body["result"]["taskId"]


async def poll(client, to, task_id, *statuses, timeout=20.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        body = await rpc(client, to, "tasks/get", {"taskId": task_id})
        assert "result" in body, body
        if body["result"]["status"] in statuses:
            return body["result"]
        assert time.monotonic() < deadline, body
        await asyncio.sleep(0.02)


async def mark(fleet, task_id: str, what: str, timeout: float = 20.0) -> tuple[float, int]:
    """Wait for the body's mark; its time and the PID of the process that left it."""
    path = fleet["marks"] / f"{task_id}.{what}"
    deadline = time.monotonic() + timeout
    while not path.exists() or not path.read_text():
        assert time.monotonic() < deadline, f"no {what} mark for {task_id}"
        await asyncio.sleep(0.01)
    stamp, pid = path.read_text().split()
    return float(stamp), int(pid)
