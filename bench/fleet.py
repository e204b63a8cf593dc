"""The worker fleet, shown to pay off: the web tier's tasks/get latency while CPU-heavy task bodies run
in the web process versus on ``db_worker`` processes, and the fleet's task throughput with 1 and 2 workers.

    python3 bench/fleet.py            # full run (~6 min on 2 cores)
    python3 bench/fleet.py --smoke    # ~40 s: one short round of each case, no chart venv built
    python3 bench/fleet.py --report bench/results/fleet.json   # fleet.md and fleet.png again

It serves the example project (``example_project/``, its ``crunch`` tool: a pure-Python CPU loop) with
one daphne process on PostgreSQL (schema ``bench_fleet`` of database ``test``) and the Redis pub/sub
channel layer, pinned to core 0 (``taskset -c 0``); the workers (``manage.py db_worker --backend fleet
--queue-name default``, both on core 1) and bench/loadgen.py (core 1). Interleaved rounds, medians:

1. responsiveness: 8 ``crunch`` bodies started, then ``tasks/get`` (of another, completed task) at
   concurrency 4 while they run; case A runs the bodies in the web process (``DJANGO_MCP_FLEET``
   unset), case B on two ``db_worker``s (``DJANGO_MCP_FLEET=1``). Rounds A B, B A, A B.
2. throughput: 16 ``crunch`` tasks created at once, time until all are ``completed``, with 1 and with
   2 ``db_worker``s (worker 1 on core 1, worker 2 on core 0 beside the web process).
3. pool check (full runs): 8 concurrent ``tools/call`` of the fleet tool, with the example's
   connection pool as shipped (psycopg's default 4): every one must get a task (before, all 8
   answered 503 after the pool's timeout: the enqueue held one connection while waiting for another; fixed in 4d352ef).

Results: ``fleet.json`` (raw + medians), ``fleet.md`` (the table) and ``fleet.png`` (the chart) in
``--out`` (default ``bench/results/``). Every process it starts is stopped by PID. See bench/README.md.

Standard library only at the top level, like bench/run.py (whose helpers it imports); the servers,
workers and load generator run on ``--python`` (default: the project's .venv, which has the
``fleet`` extra), the chart on a venv with matplotlib (bench/.venvs/harness, else bench/.venvs/chart).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench import loadgen
from bench import run as harness

ROOT = harness.ROOT
BENCH = harness.BENCH
VENVS = harness.VENVS
HOST = harness.HOST
log = harness.log
SCHEMA = "bench_fleet"  # the run's tables, in database test (dropped and made again by a full run)
REDIS_URL = "redis://127.0.0.1:6379/6"  # the channel layer (pub/sub) and the example's cache
QUEUED = "Queued for a worker"  # the statusMessage of a fleet task no worker has started
QUEUE = "default"  # the example's McpTasks keeps task_queue="default" (its README: db_worker --backend fleet)
TERMINAL = {"completed", "failed", "cancelled"}
DISTURBED_CORES = 0.25  # other work above this during a point makes the round "disturbed" (as report.py)
QUIET_CORES = 0.5  # other work above this before a case makes it wait ...
QUIET_WAIT_S = 10.0  # ... at most this long ...
QUIET_BUDGET_S = 90.0  # ... and the whole run at most this long
# Fleet tasks are created all at once, like in-process ones (the pool check below keeps that honest).
CREATE_CONCURRENCY = 8
WEB_CORE, LOADGEN_CORE = 0, 1  # bench/run.py's LoadGen pins the load generator to core 1
BODY_CORES = (1, 1)  # phase 1: case B's workers, both on core 1 (the web process keeps core 0 to itself)
TPUT_CORES = (1, 0)  # phase 2: worker 1 on core 1, worker 2 on core 0 (beside the web process)

# The example project's settings, production-shaped for the bench: DEBUG off (but no HTTPS redirect:
# the bench speaks plain HTTP on 127.0.0.1), its own schema, quiet logs. Everything else as shipped.
SETTINGS = f'''"""Written by bench/fleet.py: example_project.settings for the fleet bench."""

from example_project.settings import *  # noqa: F403

DEBUG = False
SECURE_SSL_REDIRECT = SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = False
SECURE_HSTS_SECONDS = 0
DATABASES["default"]["OPTIONS"]["options"] = "-c search_path={SCHEMA}"  # noqa: F405
LOGGING["root"]["level"] = "WARNING"  # noqa: F405
LOGGING["loggers"]["django_tasks"] = {{"level": "INFO"}}  # noqa: F405 - db_worker's "Starting worker"
'''


@dataclass
class Scale:
    """Counts and caps. Every loop is bounded by a count and a wall-clock cap."""

    rounds: int = 3
    bodies: int = 8  # CPU-heavy bodies running during the load window
    body_n: int = 30_000_000  # crunch(n): about 4 s of one core each here (about 0.14 µs a loop)
    workers: int = 2  # case B's db_workers
    concurrency: int = 4  # tasks/get clients
    idle_s: float = 3.0  # tasks/get before the bodies start (the same processes, at rest)
    settle_s: float = 0.5  # after every body (or worker) has started, before the warm-up
    warmup_s: float = 0.5
    measure_s: float = 8.0
    max_requests: int = 1_000_000
    tput_tasks: int = 16
    tput_n: int = 8_000_000  # about 1.1 s of one core each
    tput_cap_s: float = 180.0


FULL = Scale()
SMOKE = Scale(
    rounds=1,
    body_n=8_000_000,
    idle_s=0.3,
    settle_s=0.1,
    warmup_s=0.2,
    measure_s=2.0,
    max_requests=5_000,
    tput_tasks=4,
    tput_n=300_000,
    tput_cap_s=60.0,
)


# ---------------------------------------------------------------------------------------------- helpers


def snapshot(work: Path) -> tuple[Path, dict[str, Any]]:
    """Copy django_mcp/, example_project/ and manage.py as they are now, and write the settings module."""
    src = work / "src"
    copied = harness.copy_source(src, ("django_mcp", "example_project"), ("manage.py",))
    (src / "fleet_settings.py").write_text(SETTINGS)
    return src, copied


def median(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return round(statistics.median(present), 3) if present else None


def median_split(splits: list[dict[str, float] | None]) -> dict[str, float | None]:
    """The median of each part of several CPU splits (Fleet.cpu_split)."""
    present = [x for x in splits if x]
    return {k: median([x.get(k) for x in present]) for k in (present[0] if present else {})}


def ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 2) if a and b else None


Proc = harness.Proc


def proc(name: str, args: list[str], env: dict[str, str], cwd: Path, logs: Path, core: int | None) -> harness.Proc:
    """One process of the run (daphne, a db_worker), its log in ``logs``; stopped by its PID only."""
    return harness.Proc(name, args, env, cwd, logs / f"{name}-{datetime.now().strftime('%H%M%S%f')}.log", core)


# ---------------------------------------------------------------------------------------------- the run


class Fleet:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.smoke = args.smoke
        self.scale = SMOKE if args.smoke else FULL
        if args.rounds:
            self.scale.rounds = args.rounds
        self.work = Path(args.work).resolve() if args.work else BENCH / ".work" / "fleet"
        # A smoke run does not overwrite the committed results unless told to.
        self.out = Path(args.out).resolve() if args.out else (self.work / "smoke" if self.smoke else BENCH / "results")
        self.logs = self.work / "logs"
        default = ROOT / ".venv" / "bin" / "python"
        self.python = args.python or (str(default) if default.exists() else sys.executable)
        self.pin = shutil.which("taskset") is not None and (os.cpu_count() or 1) >= 2
        self.records: list[dict[str, Any]] = []
        self.notes: list[str] = []
        self.live: list[Proc] = []
        self.quiet_waited = 0.0
        self.pool: dict[str, Any] | None = None
        self.started = time.monotonic()

    # -- environment -------------------------------------------------------------------------

    def prepare(self) -> None:
        if not harness.tcp_open(HOST, 5432) or not harness.redis_up():
            raise SystemExit("bench/fleet.py needs PostgreSQL on 127.0.0.1:5432 and Redis on 127.0.0.1:6379")
        probe = subprocess.run([self.python, "-c", "import daphne, django_tasks_db, psycopg"], capture_output=True)
        if probe.returncode != 0:
            raise SystemExit(f"{self.python} lacks daphne/django_tasks_db/psycopg: pip install -e '.[dev,fleet]'")
        self.out.mkdir(parents=True, exist_ok=True)
        self.logs.mkdir(parents=True, exist_ok=True)
        self.src, self.source = snapshot(self.work)
        if not self.pin:
            self.notes.append("no taskset or fewer than 2 cores: every process ran unpinned")
        sql = (
            "import psycopg, sys\n"
            "with psycopg.connect('host=127.0.0.1 port=5432 user=postgres dbname=test', autocommit=True) as c:\n"
            f"    if sys.argv[1] == 'reset': c.execute('DROP SCHEMA IF EXISTS {SCHEMA} CASCADE')\n"
            f"    c.execute('CREATE SCHEMA IF NOT EXISTS {SCHEMA}')\n"
        )
        subprocess.run([self.python, "-c", sql, "keep" if self.smoke else "reset"], check=True, timeout=60)
        migrate = subprocess.run(
            [self.python, "manage.py", "migrate", "--noinput", "-v", "0"],
            cwd=self.src,
            env=self.env(fleet=True),
            capture_output=True,
            text=True,
            timeout=300,
        )
        if migrate.returncode != 0:
            raise SystemExit(f"migrate failed: {migrate.stderr[-2000:]}")
        self.loadgen = harness.LoadGen(self.python, self.pin)  # pinned to core 1, like bench/run.py's

    def env(self, fleet: bool) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "BENCH_", "PG", "REDIS_"))}
        env.update(
            harness.PG,
            PYTHONPATH=str(self.src),
            PYTHONDONTWRITEBYTECODE="1",
            PYTHONUNBUFFERED="1",
            DJANGO_SETTINGS_MODULE="fleet_settings",
            DJANGO_MCP_DATABASE="postgres",
            REDIS_URL=REDIS_URL,
        )
        if fleet:
            env["DJANGO_MCP_FLEET"] = "1"
        return env

    def start_web(self, fleet: bool) -> Proc:
        port = harness.free_port()
        args = [self.python, "-m", "daphne", "-v", "0", "-b", HOST, "-p", str(port), "example_project.asgi:application"]
        web = proc("web", args, self.env(fleet), self.src, self.logs, WEB_CORE if self.pin else None)
        web.port = port  # type: ignore[attr-defined]
        self.live.append(web)
        started = time.monotonic()
        web.wait_for(lambda: harness.tcp_open(HOST, port), 60)
        log(f"  web process {web.pid} listening after {time.monotonic() - started:.1f} s")
        return web

    def start_workers(self, cores: tuple[int, ...]) -> list[Proc]:
        args = [self.python, "manage.py", "db_worker", "--backend", "fleet", "--queue-name", QUEUE]
        args += ["--interval", "0.1", "--no-startup-delay", "--no-reload"]
        workers = []
        for i, core in enumerate(cores):
            workers.append(
                proc(f"worker{i + 1}", args, self.env(True), self.src, self.logs, core if self.pin else None)
            )
        self.live.extend(workers)
        started = time.monotonic()
        for worker in workers:
            worker.wait_for(lambda w=worker: "Starting worker" in w.tail(), 60)
        pids = [w.pid for w in workers]
        where = f" on cores {list(cores)}" if self.pin else ""
        log(f"  {len(workers)} db_worker(s) {pids}{where} ready after {time.monotonic() - started:.1f} s")
        return workers

    def stop_all(self) -> None:
        for proc in reversed(self.live):  # workers first, then the web process
            with contextlib.suppress(Exception):
                proc.stop()
        self.live = []

    def wait_quiet(self) -> float | None:
        """Before a case, with none of this run's processes busy: what the rest of the machine keeps busy."""
        budget = 0.0 if self.smoke else QUIET_BUDGET_S
        waited = 0.0
        while True:
            busy = harness.busy_cores(1.0)
            if busy is None or busy <= QUIET_CORES or waited >= QUIET_WAIT_S or self.quiet_waited >= budget:
                if busy is not None and busy > QUIET_CORES:
                    log(f"  other work keeps {busy} cores busy; going on")
                return busy
            log(f"  other work keeps {busy} cores busy; waiting")
            time.sleep(1.0)
            waited += 2.0
            self.quiet_waited += 2.0

    # -- the wire: bench/loadgen.py's process for what is measured, its wire code for the checks --

    def job(self, web: Proc, job: dict[str, Any], cap: float) -> dict[str, Any]:
        """One load generator job; with the cores other work took meanwhile (as bench/run.py counts it)."""
        before = harness.cpu_sample()
        result = self.loadgen.run({"host": HOST, "port": web.port, "path": "/mcp/", **job}, timeout=cap + 60)  # type: ignore[attr-defined]
        if job["kind"] != "probe":
            after = harness.cpu_sample()
            ours = {*(p.pid for p in self.live), self.loadgen.proc.pid, os.getpid()}
            result["others_cores"], result["others_top"] = harness.others_cores(before, after, ours)
            result["cores"] = self.cpu_split(before, after)
        return result

    def cpu_split(self, before: Any, after: Any) -> dict[str, float]:
        """Where the CPU went between two samples, in cores: the web process, the workers, the load
        generator, PostgreSQL, Redis (every process of each name), and the rest of the machine."""
        total = after[0] - before[0]
        core = total / (os.cpu_count() or 1) if total > 0 else 1
        groups = {p.pid: "web" if p.name == "web" else "workers" for p in self.live}
        groups[self.loadgen.proc.pid] = "loadgen"
        split = dict.fromkeys(("web", "workers", "loadgen", "postgres", "redis", "rest"), 0.0)
        for pid, (name, jiffies, started) in after[2].items():
            earlier = before[2].get(pid)
            used = jiffies - earlier[1] if earlier is not None and earlier[2] == started else jiffies
            group = groups.get(pid) or {"postgres": "postgres", "redis-server": "redis"}.get(name, "rest")
            split[group] += used / core
        split["idle"] = (after[1] - before[1]) / core
        return {k: round(v, 2) for k, v in split.items()}

    def rpcs(self, web: Proc, calls: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any] | Exception]:
        """Several requests at once from this process (bench/loadgen.py's wire code), one connection each:
        the status checks and cancels between measurements, which would take seconds one by one on case A's
        slow web process. Each answer's result, or the exception."""
        authority = f"{HOST}:{web.port}"  # type: ignore[attr-defined]

        async def one(method: str, params: dict[str, Any]) -> dict[str, Any]:
            conn = loadgen.Connection(HOST, web.port)  # type: ignore[attr-defined]
            try:
                spec = {"method": method, "params": params, "tasks": True}
                request = loadgen.build_request(authority, "/mcp/", spec)
                status, body = await asyncio.wait_for(conn.request(request), 60)
            finally:
                conn.close()
            answer = json.loads(body)
            if status != 200 or "result" not in answer:
                raise RuntimeError(f"{method}: HTTP {status} {body[:300]!r}")
            return answer["result"]

        async def every() -> list[Any]:
            return await asyncio.gather(*(one(m, p) for m, p in calls), return_exceptions=True)

        return asyncio.run(every())

    def create(
        self, web: Proc, count: int, n: int, wait: bool, cap: float, concurrency: int = CREATE_CONCURRENCY
    ) -> dict[str, Any]:
        job = {
            "kind": "create_many",
            "count": count,
            "concurrency": min(count, concurrency),
            "tool": "crunch",
            "arguments": {"n": n},
            "max_seconds": 30,
            "wait_terminal": wait,
            "wait_seconds": cap,
            "return_ids": count,
        }
        made = self.job(web, job, 30 + cap)
        if made.get("created") != count or made.get("errors"):
            raise RuntimeError(f"could not create {count} crunch tasks: {made}")
        return made

    def statuses(self, web: Proc, ids: list[str]) -> list[dict[str, Any]]:
        tasks = self.rpcs(web, [("tasks/get", {"taskId": i}) for i in ids])
        failed = [t for t in tasks if isinstance(t, Exception)]
        if failed:
            raise RuntimeError(f"tasks/get failed: {failed[0]!r}")
        return tasks  # type: ignore[return-value]

    def settle(self, web: Proc, ids: list[str], cap: float = 60.0) -> list[dict[str, Any]]:
        """Cancel what is not finished and wait (bounded) until every task is terminal."""
        tasks = self.statuses(web, ids)
        self.rpcs(web, [("tasks/cancel", {"taskId": t["taskId"]}) for t in tasks if t["status"] not in TERMINAL])
        deadline = time.monotonic() + cap
        while any(t["status"] not in TERMINAL for t in tasks) and time.monotonic() < deadline:
            time.sleep(0.2)
            tasks = self.statuses(web, ids)
        return tasks

    # -- phase 1: responsiveness -------------------------------------------------------------

    def responsiveness(self, case: str, round_no: int) -> None:
        s = self.scale
        fleet = case == "B"
        others_before = self.wait_quiet()
        web = self.start_web(fleet)
        try:
            workers = self.start_workers(BODY_CORES[: s.workers]) if fleet else []
            slots = s.workers if fleet else s.bodies  # bodies that can run at once
            ref = self.create(web, 1, 1, wait=True, cap=30)
            if ref.get("last_status") != "completed":
                raise RuntimeError(f"the reference task did not complete: {ref}")
            gets = [{"method": "tasks/get", "params": {"taskId": ref["ids"][0]}, "tasks": True}]
            loop = {"kind": "closed_loop", "requests": gets, "expect": '"status":"completed"'}
            loop.update(concurrency=s.concurrency, max_requests=s.max_requests, warmup_s=s.warmup_s)
            idle = self.job(web, {**loop, "max_seconds": s.idle_s}, s.idle_s + s.warmup_s)
            # The bodies: wait until as many have started as can run at once (the rest queue on B).
            t0 = time.monotonic()
            at_once = CREATE_CONCURRENCY if fleet else s.bodies
            ids = self.create(web, s.bodies, s.body_n, wait=False, cap=0, concurrency=at_once)["ids"]
            deadline = time.monotonic() + 30
            while True:
                tasks = self.statuses(web, ids)
                running = [t for t in tasks if t["status"] == "working" and t.get("statusMessage") != QUEUED]
                done = all(t["status"] in TERMINAL for t in tasks)
                if len(running) >= slots or done or time.monotonic() > deadline:
                    break
                time.sleep(0.05)
            started_s = time.monotonic() - t0
            log(f"  {len(running)} of {s.bodies} bodies running after {started_s:.1f} s")
            time.sleep(s.settle_s)
            loaded = self.job(web, {**loop, "max_seconds": s.measure_s}, s.measure_s + s.warmup_s)
            window_end_s = time.monotonic() - t0
            tasks = self.statuses(web, ids)
            end = {
                "running": sum(t["status"] == "working" and t.get("statusMessage") != QUEUED for t in tasks),
                "queued": sum(t["status"] == "working" and t.get("statusMessage") == QUEUED for t in tasks),
                "terminal": sum(t["status"] in TERMINAL for t in tasks),
            }
            valid = end["running"] == slots
            final = self.settle(web, ids)
            record = {
                "phase": "responsiveness",
                "case": case,
                "round": round_no,
                "bodies": s.bodies,
                "body_n": s.body_n,
                "workers": len(workers),
                "worker_cores": list(BODY_CORES[: len(workers)]) if self.pin and workers else None,
                "slots": slots,
                "bodies_started_s": round(started_s, 2),
                "window_end_s": round(window_end_s, 2),
                "at_window_end": end,
                "all_slots_busy_at_end": valid,
                "final_statuses": sorted(t["status"] for t in final),
                "idle": idle,
                "loaded": loaded,
                "others_busy_before": others_before,
                "loadavg": round(os.getloadavg()[0], 2),
            }
            self.records.append(record)
            flag = "" if valid else f"  ⚠ only {end['running']} of {slots} bodies running at the window's end"
            for label, r in (("idle", idle), ("loaded", loaded)):
                if r.get("errors") or r.get("failed"):
                    flag += f"  ⚠ {label}: {r.get('errors')} errors {r.get('sample_error') or r.get('failed')}"
            log(
                f"  {case} round {round_no}: idle p99 {idle['latency_ms']['p99']} ms, loaded p50 "
                f"{loaded['latency_ms']['p50']} p99 {loaded['latency_ms']['p99']} ms {loaded['rps']} req/s; "
                f"at the end {end}; cores {loaded.get('cores')}{flag}"
            )
        finally:
            self.stop_all()

    # -- phase 2: throughput -----------------------------------------------------------------

    def throughput(self, workers: int, round_no: int) -> None:
        s = self.scale
        others_before = self.wait_quiet()
        web = self.start_web(True)
        try:
            procs = self.start_workers(TPUT_CORES[:workers])
            # Warm each worker (its first task imports the URLconf): one short task per worker at once.
            warm = self.create(web, workers, max(s.tput_n // 4, 1), wait=True, cap=60)
            if warm.get("last_status") != "completed" or warm.get("unfinished"):
                raise RuntimeError(f"warm-up tasks did not complete: {warm}")
            t0 = time.monotonic()
            made = self.create(web, s.tput_tasks, s.tput_n, wait=True, cap=s.tput_cap_s)
            wall = time.monotonic() - t0
            tasks = self.statuses(web, made["ids"])
            completed = [t for t in tasks if t["status"] == "completed"]

            def stamp(text: str) -> float:
                return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()

            makespan = None
            if len(completed) == len(tasks):
                makespan = max(stamp(t["lastUpdatedAt"]) for t in tasks) - min(stamp(t["createdAt"]) for t in tasks)
            else:
                self.settle(web, made["ids"])
            result = {
                "tasks": s.tput_tasks,
                "completed": len(completed),
                "statuses": sorted(t["status"] for t in tasks),
                "wall_s": round(wall, 3),
                "makespan_s": round(makespan, 3) if makespan else None,
                "tasks_per_s": round(s.tput_tasks / makespan, 3) if makespan else None,
                "create_s": made.get("seconds"),
                "others_cores": made.get("others_cores"),
                "others_top": made.get("others_top"),
                "cores": made.get("cores"),
            }
            self.records.append(
                {
                    "phase": "throughput",
                    "workers": workers,
                    "worker_cores": list(TPUT_CORES[:workers]) if self.pin else None,
                    "round": round_no,
                    "tput_n": s.tput_n,
                    "pids": [p.pid for p in procs],
                    "result": result,
                    "others_busy_before": others_before,
                    "loadavg": round(os.getloadavg()[0], 2),
                }
            )
            log(
                f"  {workers} worker(s) round {round_no}: {result['completed']}/{s.tput_tasks} completed, "
                f"makespan {result['makespan_s']} s (wall {result['wall_s']} s), {result['tasks_per_s']} tasks/s "
                f"(others {result['others_cores']})"
            )
        finally:
            self.stop_all()

    # -- the pool check ----------------------------------------------------------------------

    def pool_check(self, _what: str, _round: int) -> None:
        """8 concurrent tools/call of the fleet tool on one web process (no worker): how many got a task."""
        self.wait_quiet()
        web = self.start_web(True)
        try:
            job = {"kind": "create_many", "count": 8, "concurrency": 8, "tool": "crunch", "arguments": {"n": 1}}
            job.update(max_seconds=30, wait_terminal=False, return_ids=8)
            t0 = time.monotonic()
            made = self.job(web, job, 60)
            self.pool = {
                "concurrent_calls": 8,
                "created": made.get("created"),
                "errors": made.get("errors"),
                "sample_error": made.get("sample_error"),
                "seconds": round(time.monotonic() - t0, 2),
            }
            log(f"  pool check: 8 concurrent fleet tools/call: {self.pool}")
            self.settle(web, made.get("ids") or [], cap=10)  # queued, no worker: cancelled before they start
        finally:
            self.stop_all()

    # -- the whole run -----------------------------------------------------------------------

    def run(self) -> None:
        self.prepare()
        s = self.scale
        log(
            f"fleet bench: {s.rounds} round(s); {s.bodies} bodies crunch(n={s.body_n:,}), tasks/get c={s.concurrency} "
            f"{s.measure_s} s; throughput {s.tput_tasks} x crunch(n={s.tput_n:,}); pinned={self.pin}; {self.python}"
        )
        try:
            for round_no in range(1, s.rounds + 1):
                for case in ("A", "B") if round_no % 2 else ("B", "A"):
                    self.guarded(self.responsiveness, case, round_no)
            for round_no in range(1, s.rounds + 1):
                for workers in (1, 2) if round_no % 2 else (2, 1):
                    self.guarded(self.throughput, workers, round_no)
            if not self.smoke:
                self.guarded(self.pool_check, "(8 concurrent calls)", 1)
        finally:
            self.stop_all()
            self.loadgen.stop()
        self.finish()

    def guarded(self, fn: Any, what: Any, round_no: int) -> None:
        try:
            fn(what, round_no)
        except Exception as exc:  # recorded; the other cases go on
            log(f"  {fn.__name__} {what} round {round_no} FAILED: {exc}")
            self.notes.append(f"{fn.__name__} {what} round {round_no} failed: {str(exc)[:500]}")

    def finish(self) -> None:
        wall = time.monotonic() - self.started
        data = {
            "meta": {
                "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
                "mode": "smoke" if self.smoke else "full",
                "machine": harness.machine(),
                **self.source,
                "wall_clock_s": round(wall, 1),
                "waited_for_quiet_s": round(self.quiet_waited, 1),
                "pinned": self.pin,
                "pinning": {
                    "web": WEB_CORE,
                    "loadgen": LOADGEN_CORE,
                    "workers_phase1": list(BODY_CORES),
                    "workers_throughput": list(TPUT_CORES),
                }
                if self.pin
                else None,
                "python": self.python,
                "versions": self.versions(),
            },
            "config": {**asdict(self.scale), "create_concurrency": CREATE_CONCURRENCY, "queue": QUEUE},
            "notes": self.notes,
            "summary": summarize(self.records),
            "pool_check": self.pool,
            "records": self.records,
        }
        raw = self.out / "fleet.json"
        raw.write_text(json.dumps(data, indent=1, default=str))
        sys.stdout.write(write_report(raw, build_chart_venv=not self.smoke))
        log(f"done in {wall:.0f} s: {raw}, {self.out / 'fleet.md'}")

    def versions(self) -> dict[str, str]:
        code = (
            "import importlib.metadata as m, json, sys\nout = {}\nfor n in sys.argv[1:]:\n"
            "    try: out[n] = m.version(n)\n    except m.PackageNotFoundError: pass\nprint(json.dumps(out))"
        )
        names = ["django", "daphne", "channels", "channels-redis", "psycopg", "django-tasks", "django-tasks-db"]
        probe = subprocess.run([self.python, "-c", code, *names], capture_output=True, text=True)
        try:
            return json.loads(probe.stdout)
        except ValueError:
            return {}


# ---------------------------------------------------------------------------------------------- report


def summarize(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Medians over rounds (clean rounds when there are any, as bench/report.py), ratios, and the medians
    over every round beside them."""
    summary: dict[str, Any] = {"responsiveness": {}, "throughput": {}}
    for case in ("A", "B"):
        recs = [r for r in records if r["phase"] == "responsiveness" and r["case"] == case]
        ok = [r for r in recs if not r["loaded"].get("failed") and not r["loaded"].get("errors")]
        clean = [r for r in ok if (r["loaded"].get("others_cores") or 0) <= DISTURBED_CORES]
        use = clean or ok
        summary["responsiveness"][case] = {
            "rounds": len(recs),
            "rounds_used": len(use),
            "disturbed_rounds": len(ok) - len(clean),
            "rounds_not_all_busy": sum(not r["all_slots_busy_at_end"] for r in recs),
            "p50_ms": median([r["loaded"]["latency_ms"]["p50"] for r in use]),
            "p99_ms": median([r["loaded"]["latency_ms"]["p99"] for r in use]),
            "p99_ms_all_rounds": median([r["loaded"]["latency_ms"]["p99"] for r in ok]),
            "requests": median([r["loaded"]["requests"] for r in use]),
            "max_ms": median([r["loaded"]["latency_ms"]["max"] for r in use]),
            "rps": median([r["loaded"]["rps"] for r in use]),
            "idle_p50_ms": median([r["idle"]["latency_ms"]["p50"] for r in use]),
            "idle_p99_ms": median([r["idle"]["latency_ms"]["p99"] for r in use]),
            "idle_rps": median([r["idle"]["rps"] for r in use]),
            "others_cores": median([r["loaded"].get("others_cores") for r in recs]),
            "cores": median_split([r["loaded"].get("cores") for r in recs]),
            "at_window_end": [r["at_window_end"] for r in recs],
            "loadavg": median([r["loadavg"] for r in recs]),
        }
    a, b = summary["responsiveness"]["A"], summary["responsiveness"]["B"]
    by_round = {
        (r["case"], r["round"]): r["loaded"]["latency_ms"]["p99"]
        for r in records
        if r["phase"] == "responsiveness" and r["loaded"].get("latency_ms")
    }
    rounds = sorted({n for _, n in by_round})
    paired = [ratio(by_round.get(("A", n)), by_round.get(("B", n))) for n in rounds]
    summary["responsiveness"]["ratio"] = {
        "p99_A_over_B": ratio(a["p99_ms"], b["p99_ms"]),
        "p50_A_over_B": ratio(a["p50_ms"], b["p50_ms"]),
        "rps_B_over_A": ratio(b["rps"], a["rps"]),
        "p99_A_over_B_per_round": paired,
        "p99_A_over_B_all_rounds": ratio(a["p99_ms_all_rounds"], b["p99_ms_all_rounds"]),
    }
    for workers in (1, 2):
        recs = [r for r in records if r["phase"] == "throughput" and r["workers"] == workers]
        ok = [r for r in recs if r["result"]["tasks_per_s"]]
        clean = [r for r in ok if (r["result"].get("others_cores") or 0) <= DISTURBED_CORES]
        use = clean or ok
        summary["throughput"][str(workers)] = {
            "rounds": len(recs),
            "rounds_used": len(use),
            "disturbed_rounds": len(ok) - len(clean),
            "tasks_per_s": median([r["result"]["tasks_per_s"] for r in use]),
            "tasks_per_s_all_rounds": median([r["result"]["tasks_per_s"] for r in ok]),
            "makespan_s": median([r["result"]["makespan_s"] for r in use]),
            "wall_s": median([r["result"]["wall_s"] for r in use]),
            "others_cores": median([r["result"].get("others_cores") for r in recs]),
            "cores": median_split([r["result"].get("cores") for r in recs]),
            "loadavg": median([r["loadavg"] for r in recs]),
        }
    one, two = summary["throughput"]["1"], summary["throughput"]["2"]
    summary["throughput"]["ratio_2_over_1"] = ratio(two["tasks_per_s"], one["tasks_per_s"])
    summary["throughput"]["ratio_2_over_1_all_rounds"] = ratio(
        two["tasks_per_s_all_rounds"], one["tasks_per_s_all_rounds"]
    )
    loads = [r["loadavg"] for r in records]
    summary["loadavg_1min"] = {"median": median(loads), "max": max(loads) if loads else None}
    return summary


def markdown(data: dict[str, Any]) -> str:
    meta, config, summary = data["meta"], data["config"], data["summary"]
    resp, tput = summary["responsiveness"], summary["throughput"]
    a, b, r = resp["A"], resp["B"], resp["ratio"]
    one, two = tput["1"], tput["2"]
    machine = meta["machine"]
    dirty = " (with uncommitted changes to django_mcp/ or example_project/)" if meta["uncommitted_changes"] else ""
    pin = meta.get("pinning")
    pinning = (
        f"the web process on core {pin['web']}, the load generator on core {pin['loadgen']}; case B's workers on "
        f"cores {pin['workers_phase1']}; the throughput workers on cores {pin['workers_throughput']} (the "
        "second beside the web process)"
        if pin
        else "none (no taskset or one core)"
    )

    def fmt(value: Any, unit: str = "") -> str:
        return "–" if value is None else f"{value:g}{unit}" if isinstance(value, float) else f"{value}{unit}"

    def rounds(entry: dict[str, Any]) -> str:
        text = f"{entry['rounds_used']}/{entry['rounds']}"
        if entry["disturbed_rounds"] and entry["rounds_used"] < entry["rounds"]:
            text += " °"  # disturbed rounds left out
        elif entry["disturbed_rounds"]:
            text += " ~"  # every round disturbed: all used
        return text

    lines = [
        "# django-mcp worker fleet: web-tier latency and task throughput",
        "",
        f"- date: {meta['date']} ({meta['mode']} run, {meta['wall_clock_s']:.0f} s)",
        f"- machine: {machine['nproc']} cores, {machine['cpu']}, {machine['platform']}",
        f"- git commit: `{meta['git_commit']}`{dirty}",
        f"- versions: {', '.join(f'{k} {v}' for k, v in meta['versions'].items())}",
        f"- pinning: {pinning}; PostgreSQL and Redis unpinned",
        f"- 1-minute load average during the run: median {summary['loadavg_1min']['median']}, "
        f"max {summary['loadavg_1min']['max']} (the run itself keeps about 2 busy); other work on the machine "
        f"during the measured windows (cores, median): A {fmt(a['others_cores'])}, B {fmt(b['others_cores'])}, "
        f"1 worker {fmt(one['others_cores'])}, 2 workers {fmt(two['others_cores'])}",
        "- command: `python3 bench/fleet.py" + (" --smoke" if meta["mode"] == "smoke" else "") + "`",
        "",
        f"## 1. `tasks/get` on the web tier while {config['bodies']} CPU-heavy task bodies run",
        "",
        f"One daphne process serves the example project (PostgreSQL, Redis channel layer, `DEBUG` off). "
        f"{config['bodies']} `crunch(n={config['body_n']:,})` tasks are started; once they run, `tasks/get` of "
        f"another (completed) task at concurrency {config['concurrency']} for {config['measure_s']:g} s (after "
        f"{config['warmup_s']:g} s warm-up). **A**: the bodies run in the web process (`DJANGO_MCP_FLEET` unset). "
        f"**B**: on {config['workers']} `db_worker`s (`DJANGO_MCP_FLEET=1`). Rounds interleaved (A B, B A, A B); "
        f"medians over rounds. *idle*: the same processes, {config['idle_s']:g} s before the bodies start.",
        "",
        "| case | rounds | p50 | **p99** | max | req/s | requests | idle p50 | idle p99 | idle req/s |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name, e in (("A: bodies in the web process", a), (f"B: bodies on {config['workers']} db_workers", b)):
        lines.append(
            f"| {name} | {rounds(e)} | {fmt(e['p50_ms'], ' ms')} | **{fmt(e['p99_ms'], ' ms')}** | "
            f"{fmt(e['max_ms'], ' ms')} | {fmt(e['rps'])} | {fmt(e['requests'])} | {fmt(e['idle_p50_ms'], ' ms')} | "
            f"{fmt(e['idle_p99_ms'], ' ms')} | {fmt(e['idle_rps'])} |"
        )
    per_round = ", ".join(fmt(x, "×") for x in r["p99_A_over_B_per_round"])
    lines += [
        "",
        f"**p99 A / B = {fmt(r['p99_A_over_B'], '×')}** (per round: {per_round}; medians of every round, "
        f"disturbed or not: {fmt(r.get('p99_A_over_B_all_rounds'), '×')}); p50 A / B = "
        f"{fmt(r['p50_A_over_B'], '×')}; req/s B / A = {fmt(r['rps_B_over_A'], '×')}. *requests*: measured "
        "requests per round (median): at A's rate the p99 of a round is close to its slowest request.",
        "",
    ]
    notbusy = [c for c in ("A", "B") if resp[c]["rounds_not_all_busy"]]
    if notbusy:
        which = ", ".join(f"{resp[c]['rounds_not_all_busy']} round(s) of {c}" for c in notbusy)
        lines.append(
            f"⚠ In {which} fewer bodies than could run at once were still running at the end of the load window "
            "(see `at_window_end` in the JSON)."
        )
    else:
        lines.append(
            "Checked in every round: at the end of the load window the bodies were still running (A: all "
            f"{config['bodies']} in the web process; B: one on each worker, the rest queued or done: "
            + "; ".join(
                f"{e['running']} running, {e['queued']} queued, {e['terminal']} done" for e in b["at_window_end"]
            )
            + ")."
        )
    lines += [
        "",
        f"## 2. Throughput: {config['tput_tasks']} `crunch(n={config['tput_n']:,})` tasks created at once",
        "",
        "From the first task's `createdAt` to the last one's `lastUpdatedAt` (every one `completed`), with one and "
        "with two `db_worker`s; rounds interleaved (1 2, 2 1, 1 2), medians. The client's wall clock (from "
        "before the first `tools/call` until it saw the last task `completed`) is beside it.",
        "",
        "| workers | rounds | tasks/s | makespan | makespan / task | client wall clock |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for workers, e in (("1", one), ("2", two)):
        per = round(e["makespan_s"] / config["tput_tasks"], 3) if e["makespan_s"] else None
        lines.append(
            f"| {workers} | {rounds(e)} | **{fmt(e['tasks_per_s'])}** | {fmt(e['makespan_s'], ' s')} | "
            f"{fmt(per, ' s')} | {fmt(e['wall_s'], ' s')} |"
        )
    lines += [
        "",
        f"**2 workers / 1 worker = {fmt(tput['ratio_2_over_1'], '×')}** (medians of every round, disturbed or not: "
        f"{fmt(tput.get('ratio_2_over_1_all_rounds'), '×')})",
        "",
        "Rounds: used/run; ° rounds disturbed by other work (> 0.25 core) left out of the median, ~ every round "
        "was disturbed and all are used (every round is in `fleet.json`).",
    ]
    parts = ("web", "workers", "loadgen", "postgres", "redis", "rest", "idle")
    lines += [
        "",
        "## Where the CPU went",
        "",
        "During the loaded window (1) and the whole throughput run (2), in cores, median over rounds; *rest* is "
        "the rest of the machine (e.g. other test runs, and processes that ended within the window), *idle* "
        "what nobody used:",
        "",
        "| case | " + " | ".join(parts) + " |",
        "| --- | " + " | ".join("---:" for _ in parts) + " |",
        *(
            f"| {case} | " + " | ".join(fmt(e["cores"].get(k)) for k in parts) + " |"
            for case, e in (("A", a), ("B", b), ("throughput, 1 worker", one), ("throughput, 2 workers", two))
            if e.get("cores")
        ),
    ]
    pool = data.get("pool_check")
    if pool:
        error = f" (`{pool['sample_error'][:160]}`)" if pool["errors"] else ""
        lines += [
            "",
            "## Pool check",
            "",
            f"{pool['concurrent_calls']} concurrent `tools/call` of the fleet tool on one web process, with the "
            f"example's connection pool as shipped: {pool['created']} got a task, {pool['errors']} failed{error}, "
            f"in {pool['seconds']} s. The phases above create fleet tasks "
            f"{config['create_concurrency']} at a time (case A's in-process bodies: all at once).",
        ]
    lines += ["", "## Reading", "", *reading(data)]
    if data["notes"]:
        lines += ["", "## Notes", "", *(f"- {n}" for n in data["notes"])]
    return "\n".join(lines) + "\n"


def reading(data: dict[str, Any]) -> list[str]:
    """A short reading that follows from the figures (the words are chosen by them, not fixed)."""
    summary, config = data["summary"], data["config"]
    a, b, r = summary["responsiveness"]["A"], summary["responsiveness"]["B"], summary["responsiveness"]["ratio"]
    t = summary["throughput"]
    out = []
    if a["p99_ms"] and b["p99_ms"]:
        out.append(
            f"- **In the web process** (A) the event loop shares one core and the GIL with {config['bodies']} "
            f"CPU-bound threads: `tasks/get` p99 {a['p99_ms']:g} ms (at rest {a['idle_p99_ms']:g} ms), "
            f"{a['rps']:g} req/s. **On the workers** (B) the web process only serves requests: p99 "
            f"{b['p99_ms']:g} ms (at rest {b['idle_p99_ms']:g} ms), {r['p99_A_over_B']:g}× lower, at "
            f"{r['rps_B_over_A']:g}× the req/s."
        )
        if a.get("requests") and a["requests"] < 100:
            out.append(
                f"- A answered about {a['requests']:g} requests per {config['measure_s']:g} s window, so its p99 is "
                "the slowest of them "
                "(p99 = max); its p50 says the same: every request waits on the GIL, not a few."
            )
        if b["idle_p99_ms"] and b["p99_ms"] > 1.5 * b["idle_p99_ms"]:
            out.append(
                f"- B is still {ratio(b['p99_ms'], b['idle_p99_ms'])}× its own idle p99: on 2 cores the load "
                "generator shares core 1 with the two busy workers, and PostgreSQL, Redis and the machine's "
                "other work (unpinned) are pushed onto the web process's core 0 while core 1 is full. With the "
                "workers on other machines this gap would shrink; A's would not (it is the web process's own GIL)."
            )
        elif b["idle_p99_ms"]:
            out.append(
                f"- B's figures are those of the same processes at rest (p50 {b['p50_ms']:g} vs {b['idle_p50_ms']:g} "
                f"ms, p99 {b['p99_ms']:g} vs {b['idle_p99_ms']:g} ms, within this machine's round-to-round noise): "
                "with the bodies on the workers, the web tier does not feel them."
            )
    if t["ratio_2_over_1"]:
        one_cores = (t["1"].get("cores") or {}).get("workers")
        two_cores = (t["2"].get("cores") or {}).get("workers")
        busy = (
            f" The workers kept {one_cores:g} and {two_cores:g} cores busy; the rest of a worker's time goes, "
            "presumably, to waiting on PostgreSQL and Redis (claiming each job, its progress updates, its result)."
            if one_cores and two_cores
            else ""
        )
        out.append(
            f"- **Throughput**: {t['1']['tasks_per_s']:g} tasks/s with one worker, {t['2']['tasks_per_s']:g} with "
            f"two ({t['ratio_2_over_1']:g}×). A `db_worker` runs one job at a time, so a worker is at most a core's "
            "worth of bodies; on this machine the second worker shares core 0 with the web process, PostgreSQL, "
            f"Redis and whatever else runs there, so 2× is the ceiling and less is expected.{busy}"
        )
    return out


def write_report(raw: Path, build_chart_venv: bool) -> str:
    """fleet.md and fleet.png beside ``raw`` (fleet.json); returns the markdown."""
    data = json.loads(raw.read_text())
    text = markdown(data)
    raw.with_suffix(".md").write_text(text)
    python = chart_python(build_chart_venv)
    if python is None:
        log("no matplotlib venv (bench/.venvs/harness or bench/.venvs/chart): no chart")
    else:
        made = subprocess.run([python, __file__, "--chart", str(raw)], capture_output=True, text=True, timeout=120)
        if made.returncode != 0:
            log(f"the chart could not be drawn: {made.stderr[-1500:]}")
    return text


def chart_python(build: bool) -> str | None:
    """A Python with matplotlib: bench/.venvs/harness (bench/run.py's), else bench/.venvs/chart (built if
    ``build``)."""
    for name in ("harness", "chart"):
        python = harness.venv_python(name)
        if python.exists() and harness._has_module(str(python), "matplotlib"):
            return str(python)
    if not build:
        return None
    log("building bench/.venvs/chart (matplotlib) for the chart")
    venv = VENVS / "chart"
    try:
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True, timeout=120)
        pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
        subprocess.run([*pip, "matplotlib>=3.8"], check=True, capture_output=True, timeout=900)
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
        log(f"no chart: the matplotlib venv could not be built ({exc})")
        return None
    return str(venv / "bin" / "python")


def chart(raw: Path) -> None:
    """fleet.png beside ``raw`` (run in a venv with matplotlib)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    data = json.loads(raw.read_text())
    records, summary = data["records"], data["summary"]
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2), gridspec_kw={"width_ratios": [3, 2]})
    cases = [("A", "bodies in\nweb process"), ("B", f"bodies on\n{data['config']['workers']} db_workers")]
    width = 0.2
    for i, (case, _label) in enumerate(cases):
        entry = summary["responsiveness"][case]
        bars = [("idle p50", entry["idle_p50_ms"]), ("idle p99", entry["idle_p99_ms"])]
        bars += [("loaded p50", entry["p50_ms"]), ("loaded p99", entry["p99_ms"])]
        for j, (name, value) in enumerate(bars):
            x = i + (j - 1.5) * width
            color = ["#9ecae1", "#3182bd", "#fdae6b", "#e6550d"][j]
            left.bar(x, value or 0, width, color=color, label=name if i == 0 else None)
            if value:
                left.text(
                    x, value, f"{value:.0f}" if value >= 100 else f"{value:.1f}", ha="center", va="bottom", fontsize=7
                )
            key = ("idle", "idle", "loaded", "loaded")[j]
            pct = ("p50", "p99", "p50", "p99")[j]
            dots = [
                r[key]["latency_ms"][pct]
                for r in records
                if r["phase"] == "responsiveness" and r["case"] == case and r[key].get("latency_ms")
            ]
            left.scatter([x] * len(dots), dots, s=8, color="black", zorder=3)
    left.set_yscale("log")
    left.set_xticks(range(len(cases)), [c[1] for c in cases])
    left.set_ylabel("tasks/get latency (ms, log)")
    ratio_text = summary["responsiveness"]["ratio"]["p99_A_over_B"]
    left.set_title(
        f"tasks/get c={data['config']['concurrency']} while {data['config']['bodies']} CPU-heavy bodies run "
        f"(p99 A/B {ratio_text}×)",
        fontsize=9,
    )
    left.legend(fontsize=7)
    tput = summary["throughput"]
    xs = ["1 worker", "2 workers"]
    values = [tput["1"]["tasks_per_s"] or 0, tput["2"]["tasks_per_s"] or 0]
    right.bar(xs, values, color=["#74c476", "#31a354"])
    for x, workers in enumerate((1, 2)):
        dots = [
            r["result"]["tasks_per_s"]
            for r in records
            if r["phase"] == "throughput" and r["workers"] == workers and r["result"]["tasks_per_s"]
        ]
        right.scatter([x] * len(dots), dots, s=8, color="black", zorder=3)
        right.text(x, values[x], f"{values[x]:.2f}", ha="center", va="bottom", fontsize=8)
    right.set_ylabel("tasks/s")
    right.set_title(
        f"{data['config']['tput_tasks']} × crunch(n={data['config']['tput_n']:,}) (2/1 {tput['ratio_2_over_1']}×)",
        fontsize=9,
    )
    meta = data["meta"]
    fig.suptitle(f"django-mcp worker fleet — {meta['date']}, {meta['git_commit'][:10]}", fontsize=10)
    fig.tight_layout()
    fig.savefig(raw.with_suffix(".png"), dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--smoke", action="store_true", help="a tiny round of each case (~30 s), no chart venv built")
    parser.add_argument("--out", help="where to write fleet.{json,md,png} (default bench/results/)")
    parser.add_argument("--rounds", type=int, help="interleaved rounds of each phase (default 3; smoke 1)")
    parser.add_argument("--work", help="scratch directory: source snapshot, logs (default bench/.work/fleet/)")
    parser.add_argument("--python", help="the interpreter of the servers, workers and load generator (default .venv)")
    parser.add_argument("--report", metavar="JSON", help="only write fleet.md and fleet.png again from a fleet.json")
    parser.add_argument("--chart", metavar="JSON", help=argparse.SUPPRESS)  # internal: draw fleet.png
    args = parser.parse_args()
    if args.chart:
        chart(Path(args.chart))
        return
    if args.report:
        raw = Path(args.report).resolve()
        data = json.loads(raw.read_text())
        data["summary"] = summarize(data["records"])  # the records as measured; the summary made again
        raw.write_text(json.dumps(data, indent=1, default=str))
        sys.stdout.write(write_report(raw, build_chart_venv=True))
        return
    # A SIGTERM stops the run like Ctrl-C: the finally blocks stop every process it started, by PID.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    Fleet(args).run()


if __name__ == "__main__":
    main()
