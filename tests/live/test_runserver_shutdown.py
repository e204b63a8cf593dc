"""Graceful shutdown under ``manage.py runserver``: SIGTERM fails running tasks as interrupted at once.

With ``--noreload`` the server runs in the main thread and our handlers are chained from the first
request; with the autoreloader it runs in a thread of the child process, and the handlers are chained
from the main thread when the reloader starts. (Django's reloading parent kills its child outright on
SIGTERM, so the signal goes to the process that serves; README "Deployment".)
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.live.servers import ROOT, free_port
from tests.wire import headers_for, request_body

pytestmark = pytest.mark.live

EXT = {"extensions": {"io.modelcontextprotocol/tasks": {}}}


def _children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").glob("*/children"):
        found += [int(p) for p in task.read_text().split()]
    return found


def _start(tmp_path: Path, reload: bool) -> tuple[subprocess.Popen[bytes], str, Path]:
    db = tmp_path / "db.sqlite3"
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "example_project.settings",
        "DJANGO_MCP_SQLITE": str(db),
        "DJANGO_MCP_DATABASE": "sqlite",
        "REDIS_URL": "",
    }
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
    port = free_port()
    args = [sys.executable, "manage.py", "runserver", f"127.0.0.1:{port}", *([] if reload else ["--noreload"])]
    log = (tmp_path / "server.log").open("wb")
    proc = subprocess.Popen(args, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}/mcp/"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            httpx.get(base, timeout=1)
            return proc, base, db
        except httpx.TransportError:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError((tmp_path / "server.log").read_text())


def _create_render_task(base: str) -> str:
    body = request_body("tools/call", {"name": "render", "arguments": {"scene": "s", "frames": 400}}, capabilities=EXT)
    response = httpx.post(base, content=json.dumps(body), headers=headers_for(body), timeout=10)
    return response.json()["result"]["taskId"]


def _row(db: Path, task_id: str) -> tuple[str, str]:
    with sqlite3.connect(db) as conn:
        status, error = conn.execute(
            "SELECT status, error FROM django_mcp_task WHERE id = ?", [task_id.replace("-", "")]
        ).fetchone()
    return status, error or ""


@pytest.mark.parametrize("reload", [False, True], ids=["noreload", "autoreloader"])
def test_sigterm_fails_running_tasks_as_interrupted(tmp_path, reload):
    proc, base, db = _start(tmp_path, reload)
    try:
        task_id = _create_render_task(base)
        assert _row(db, task_id)[0] == "working"  # its body runs from the answer on: 400 frames, seconds
        serving = proc.pid
        if reload:
            (serving,) = _children(proc.pid)  # the reloader's child runs the server
        os.kill(serving, signal.SIGTERM)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and _row(db, task_id)[0] == "working":
            time.sleep(0.1)
        status, error = _row(db, task_id)
        assert status == "failed", (tmp_path / "server.log").read_text()[-2000:]
        assert "Task interrupted" in error
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
