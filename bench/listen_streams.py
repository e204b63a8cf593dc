"""Listen streams under daphne: what one open stream costs, and whether fan-out starves other requests.

    .venv/bin/python bench/listen_streams.py --uncapped [--streams 1000] [--notify-rate 10] [--seconds 8]
        [--follow list|task] [--layer redis|memory] [--writes-per-second N] [--json FILE]

Starts one daphne (or ``--server uvicorn``) worker (``tests.asgi``: the test project with its middleware,
SQLite in a temporary directory; the Redis pub/sub channel layer on a private ``redis-server`` started on a
free port, or ``--layer memory``) on 127.0.0.1, pinned to core 0 when ``taskset`` and two cores are there (this
client then runs on core 1), and measures:

1. **threads and RSS per open stream**: ``/proc/<pid>/status`` of the worker before and after
   ``--streams`` ``subscriptions/listen`` streams (``toolsListChanged`` on ``/mcp-tasks/``) are open
   and acknowledged, divided by the number of streams; then again after they are closed;
2. **latency of ordinary requests** (``tools/list`` on ``/mcp/``, ``--concurrency`` closed-loop
   clients): before any stream is open (``no_streams``), with the streams open and idle (``idle``),
   then while a notifier calls ``toggle_tool`` ``--notify-rate`` times a second (``fan_out``: each
   call is two ``notifications/tools/list_changed`` for every stream), with how many toggles the
   notifier got through, how many notifications the streams received (repeated list changes that
   queue up for a stream go out once: fewer than were sent) and how many streams the server closed.

``--follow task`` (the issue's "listen fan-out"): every stream follows one task instead (``taskIds``), the
task (``slow``) updates its status ``--notify-rate`` times a second through the load phase and then
completes, and the ordinary requests are ``tools/call`` (``add``); it also counts the streams that
received the task's final state (``completed``): every one must.

Every stream is anonymous, i.e. one principal: ``--uncapped`` lifts ``LISTEN_MAX_STREAMS_PER_PRINCIPAL``
(default 100) for the run (a settings module of its own, ``tests.settings`` plus
``BENCH_LISTEN_DJANGO_MCP``, written to the temporary directory). Run it on an otherwise idle
machine: the latencies are only comparable within a run or between runs on the same quiet machine.

Every loop is bounded by a count and a wall-clock cap; every process it starts is stopped by PID.
Loopback only.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.loadgen import Connection, build_request, percentiles  # noqa: E402

HOST = "127.0.0.1"
SETTINGS_OVERRIDE = """
from tests.settings import *  # noqa: F401,F403
import os
DJANGO_MCP = {**DJANGO_MCP, **__import__("json").loads(os.environ.get("BENCH_LISTEN_DJANGO_MCP", "{}"))}
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": "WARNING"},
}
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def proc_status(pid: int) -> dict[str, int]:
    """Threads and VmRSS (KiB) of a process, from /proc."""
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("Threads", "VmRSS"):
            fields[key] = int(value.split()[0])
    return fields


class Server:
    """One daphne process on 127.0.0.1; stopped by PID."""

    def __init__(self, work: Path, env: dict[str, str], pin: bool, kind: str = "daphne") -> None:
        self.port = free_port()
        self.log = (work / f"{kind}.log").open("wb")
        if kind == "daphne":
            cmd = [sys.executable, "-m", "daphne", "-b", HOST, "-p", str(self.port), "tests.asgi:application"]
        else:
            cmd = [sys.executable, "-m", "uvicorn", "tests.asgi:application", "--host", HOST, "--port", str(self.port)]
            cmd += ["--no-access-log", "--log-level", "warning"]
        if pin:
            cmd = ["taskset", "-c", "0", *cmd]
        self.proc = subprocess.Popen(
            cmd, cwd=ROOT, env=env, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True
        )

    async def ready(self, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"daphne exited with {self.proc.returncode}")
            try:
                _, writer = await asyncio.open_connection(HOST, self.port)
                writer.close()
                return
            except OSError:
                await asyncio.sleep(0.1)
        raise RuntimeError("daphne did not start")

    def status(self) -> dict[str, int]:
        return proc_status(self.proc.pid)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)
        self.log.close()


class Stream:
    """One open listen stream: counts the notifications it receives."""

    def __init__(self, port: int, index: int, task_id: str | None = None) -> None:
        self.conn = Connection(HOST, port)
        self.index = index
        self.task_id = task_id
        self.received = 0
        self.last_status: str | None = None
        self.closed_by_server = False
        self.reader: asyncio.Task[None] | None = None

    async def open(self) -> None:
        if self.task_id is None:
            spec = {"method": "subscriptions/listen", "params": {"notifications": {"toolsListChanged": True}}}
        else:
            spec = {
                "method": "subscriptions/listen",
                "params": {"notifications": {"taskIds": [self.task_id]}},
                "tasks": True,
            }
        status, ctype = await self.conn.open_stream(build_request(f"{HOST}:{self.conn.port}", "/mcp-tasks/", spec))
        if status == 429:
            raise RuntimeError(
                f"listen stream {self.index} refused (429): every stream here is one (anonymous) principal, "
                "and LISTEN_MAX_STREAMS_PER_PRINCIPAL caps them; run with --uncapped"
            )
        if status != 200 or not ctype.startswith(b"text/event-stream"):
            raise RuntimeError(f"listen stream {self.index}: {status} {ctype!r}")
        ack = await asyncio.wait_for(self.conn.event(), 10)
        assert ack.get("method") == "notifications/subscriptions/acknowledged", ack

    async def _read(self) -> None:
        try:
            while True:
                frame = await self.conn.event()
                if frame.get("method") in ("notifications/tools/list_changed", "notifications/tasks"):
                    self.received += 1
                    self.last_status = frame["params"].get("status", self.last_status)
                elif "result" in frame or "error" in frame:
                    self.closed_by_server = True
                    return
        except (EOFError, OSError, asyncio.IncompleteReadError):
            self.closed_by_server = True

    def start_reading(self) -> None:
        self.reader = asyncio.ensure_future(self._read())

    async def close(self) -> None:
        if self.reader is not None:
            self.reader.cancel()
        self.conn.close()


async def open_streams(
    port: int, count: int, task_id: str | None = None, batch: int = 50, timeout: float = 120
) -> list[Stream]:
    streams: list[Stream] = []
    deadline = time.monotonic() + timeout
    for start in range(0, count, batch):
        if time.monotonic() > deadline:
            raise RuntimeError(f"opened only {len(streams)} of {count} streams in {timeout} s")
        group = [Stream(port, i, task_id) for i in range(start, min(count, start + batch))]
        await asyncio.gather(*(s.open() for s in group))
        streams += group
    return streams


LIST_TOOLS = ({"method": "tools/list"}, b'"tools"')
CALL_ADD = ({"method": "tools/call", "params": {"name": "add", "arguments": {"a": 1, "b": 2}}}, b'"text":"3"')


async def closed_loop(
    port: int,
    concurrency: int,
    seconds: float,
    request: tuple[dict[str, Any], bytes] = LIST_TOOLS,
    max_requests: int = 200_000,
) -> dict[str, Any]:
    """``request`` on /mcp/ by ``concurrency`` clients for ``seconds``: latency percentiles (ms)."""
    spec, expected = request
    payload = build_request(f"{HOST}:{port}", "/mcp/", spec)
    latencies: list[float] = []
    errors = 0
    deadline = time.perf_counter() + seconds

    async def client() -> None:
        nonlocal errors
        conn = Connection(HOST, port)
        try:
            while time.perf_counter() < deadline and len(latencies) < max_requests:
                t0 = time.perf_counter()
                try:
                    status, body = await asyncio.wait_for(conn.request(payload), 30)
                except (OSError, asyncio.IncompleteReadError, TimeoutError):
                    conn.close()
                    status, body = -1, b""
                if status != 200 or expected not in body:
                    errors += 1
                    continue
                latencies.append((time.perf_counter() - t0) * 1000)
        finally:
            conn.close()

    await asyncio.gather(*(client() for _ in range(concurrency)))
    return {"requests": len(latencies), "errors": errors, "rps": round(len(latencies) / seconds, 1)} | {
        f"{k}_ms": v for k, v in percentiles(latencies).items()
    }


async def notifier(port: int, rate: float, seconds: float) -> int:
    """Call ``toggle_tool`` ``rate`` times a second for ``seconds`` (open loop); returns the calls made."""
    payload = build_request(
        f"{HOST}:{port}", "/mcp-tasks/", {"method": "tools/call", "params": {"name": "toggle_tool", "arguments": {}}}
    )
    conn = Connection(HOST, port)
    calls = 0
    start = time.perf_counter()
    try:
        while (now := time.perf_counter()) - start < seconds:
            due = start + calls / rate
            if due > now:
                await asyncio.sleep(due - now)
            status, body = await asyncio.wait_for(conn.request(payload), 30)
            if status != 200 or b"toggled" not in body:
                raise RuntimeError(f"toggle_tool: {status} {body[:200]!r}")
            calls += 1
    finally:
        conn.close()
    return calls


async def start_task(port: int, rate: float, seconds: float) -> str:
    """Start ``slow``: ``rate`` status updates a second for ``seconds``, then completed; its id."""
    steps = max(1, round(rate * seconds))
    spec = {
        "method": "tools/call",
        "params": {"name": "slow", "arguments": {"seconds": seconds, "steps": steps}},
        "tasks": True,
    }
    conn = Connection(HOST, port)
    try:
        status, body = await asyncio.wait_for(conn.request(build_request(f"{HOST}:{port}", "/mcp-tasks/", spec)), 30)
    finally:
        conn.close()
    answer = json.loads(body)
    if status != 200 or answer.get("result", {}).get("resultType") != "task":
        raise RuntimeError(f"slow: no task handle: {status} {body[:200]!r}")
    return str(answer["result"]["taskId"])


async def _settled(server: Server, seconds: float = 1.5) -> dict[str, int]:
    await asyncio.sleep(seconds)  # not time.sleep: the client's sockets close on this loop
    return server.status()


async def run(args: argparse.Namespace) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="django-mcp-listen-bench-"))
    pin = shutil.which("taskset") is not None and (os.cpu_count() or 1) >= 2
    env = {
        **os.environ,
        "PYTHONPATH": f"{work}{os.pathsep}{ROOT}",
        "DJANGO_SETTINGS_MODULE": "listen_bench_settings",
        "DJANGO_MCP_SQLITE": str(work / "db.sqlite3"),
        "BENCH_LISTEN_DJANGO_MCP": json.dumps(
            {
                "LISTEN_KEEPALIVE_SECONDS": 15.0,
                **({"LISTEN_MAX_STREAMS_PER_PRINCIPAL": None} if args.uncapped else {}),
                **({"LISTEN_WRITES_PER_SECOND": args.writes_per_second or None} if args.writes_per_second >= 0 else {}),
            }
        ),
    }
    env.pop("REDIS_URL", None)
    env.pop("DJANGO_MCP_DATABASE", None)
    (work / "listen_bench_settings.py").write_text(SETTINGS_OVERRIDE)
    redis: subprocess.Popen[bytes] | None = None
    server: Server | None = None
    figures: dict[str, Any] = {
        "streams": args.streams,
        "pinned": pin,
        "layer": args.layer,
        "follow": args.follow,
        "server": args.server,
    }
    streams: list[Stream] = []
    try:
        if args.layer == "redis":
            redis_port = free_port()
            redis = subprocess.Popen(
                ["redis-server", "--port", str(redis_port), "--bind", HOST, "--save", "", "--appendonly", "no"],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            env["REDIS_URL"] = f"redis://{HOST}:{redis_port}/0"
        subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True, timeout=180)
        if pin:
            os.sched_setaffinity(0, {1})
        server = Server(work, env, pin, args.server)
        await server.ready()
        # Warm up: every code path the measurement takes, once, so imports and caches are not counted.
        await closed_loop(server.port, 2, 1.0)
        warm = await open_streams(server.port, 4)
        for s in warm:
            await s.close()
        base = await _settled(server)
        figures["baseline"] = base
        load_request = CALL_ADD if args.follow == "task" else LIST_TOOLS
        figures["no_streams"] = await closed_loop(server.port, args.concurrency, args.seconds, load_request)

        task_id = None
        if args.follow == "task":
            task_id = await start_task(server.port, args.notify_rate, args.open_allowance + args.seconds)
            task_started = time.perf_counter()
        started = time.perf_counter()
        streams = await open_streams(server.port, args.streams, task_id)
        figures["open_seconds"] = round(time.perf_counter() - started, 2)
        opened = await _settled(server)
        figures["open"] = opened
        figures["threads_per_stream"] = round((opened["Threads"] - base["Threads"]) / args.streams, 3)
        figures["rss_kib_per_stream"] = round((opened["VmRSS"] - base["VmRSS"]) / args.streams, 1)

        for s in streams:
            s.start_reading()
        reading = time.perf_counter()
        if task_id is None:
            figures["idle"] = await closed_loop(server.port, args.concurrency, args.seconds)
            load, calls = await asyncio.gather(
                closed_loop(server.port, args.concurrency, args.seconds),
                notifier(server.port, args.notify_rate, args.seconds),
            )
            await asyncio.sleep(2)  # let the last notifications drain
            sent: dict[str, Any] = {"toggle_calls": calls, "notifications_sent_per_stream": 2 * calls}
        else:
            if time.perf_counter() - task_started > args.open_allowance:
                raise RuntimeError("the streams took longer to open than --open-allowance: the task ends too soon")
            load = await closed_loop(server.port, args.concurrency, args.seconds, CALL_ADD)
            ends = time.perf_counter() + args.open_allowance + 30
            while any(s.last_status != "completed" and not s.closed_by_server for s in streams):
                if time.perf_counter() > ends:
                    break
                await asyncio.sleep(0.2)
            await asyncio.sleep(1)
            sent = {
                "task_updates": max(1, round(args.notify_rate * (args.open_allowance + args.seconds))),
                "final_state_received": sum(s.last_status == "completed" for s in streams),
            }
        figures["fan_out"] = (
            load
            | sent
            | {
                "received_per_stream": percentiles([float(s.received) for s in streams]),
                "closed_by_server": sum(s.closed_by_server for s in streams),
                "frames_per_second": round(
                    sum(s.received for s in streams)
                    / (args.seconds if task_id is None else time.perf_counter() - reading)
                ),
            }
        )
        for s in streams:
            await s.close()
        streams = []
        figures["closed"] = await _settled(server, 3)
    finally:
        for s in streams:
            await s.close()
        if server is not None:
            server.stop()
        if redis is not None:
            redis.terminate()
            redis.wait(timeout=10)
        shutil.rmtree(work, ignore_errors=True)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--streams", type=int, default=1000)
    parser.add_argument("--notify-rate", type=float, default=10.0, help="toggle_tool calls per second")
    parser.add_argument("--seconds", type=float, default=8.0, help="each latency phase")
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--server", choices=("daphne", "uvicorn"), default="daphne")
    parser.add_argument(
        "--follow",
        choices=("list", "task"),
        default="list",
        help="list: the streams follow tool list changes (toggle_tool); task: one task updating --notify-rate/s",
    )
    parser.add_argument(
        "--open-allowance", type=float, default=30.0, help="--follow task: seconds the streams may take to open"
    )
    parser.add_argument(
        "--layer",
        choices=("redis", "memory"),
        default="redis",
        help="redis: the pub/sub channel layer on a private redis-server (started on a free port); memory: in-memory",
    )
    parser.add_argument("--uncapped", action="store_true", help="lift LISTEN_MAX_STREAMS_PER_PRINCIPAL for the run")
    parser.add_argument(
        "--writes-per-second",
        type=int,
        default=-1,
        help="LISTEN_WRITES_PER_SECOND for the run (0: no limit; default: the setting's default)",
    )
    parser.add_argument("--json", default="", help="also write the figures here")
    args = parser.parse_args()
    try:
        figures = asyncio.run(run(args))
    except RuntimeError as exc:
        sys.exit(f"listen_streams: {exc}")
    text = json.dumps(figures, indent=2)
    print(text)
    if args.json:
        Path(args.json).write_text(text)


if __name__ == "__main__":
    main()
