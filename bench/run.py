"""The django-mcp benchmark harness: one command, every target, ratios measured in the same run.

    python3 bench/run.py            # full run (~20 min on 2 cores; builds bench/.venvs/ first)
    python3 bench/run.py --smoke    # ~10 s: one tiny scenario per available target, no venv built
    python3 bench/run.py --phases main --targets "uvicorn,sdk,mcpz"   # a part of it

It starts each server under test on 127.0.0.1 pinned to core 0 (``taskset -c 0``), drives it from
``bench/loadgen.py`` in a separate process pinned to core 1, runs the targets interleaved (round
1: A B C ..., round 2: A B C ...) and reports medians over the rounds. Every process it starts is
stopped by PID. Results: ``results.json`` (raw + summary), ``results.md`` (the table) and
``results.png`` (the chart) in ``--out`` (default ``bench/results/``). See bench/README.md.

This file uses only the standard library, so any Python >= 3.11 runs it; the servers and the load
generator run in the virtualenvs it builds under bench/.venvs/.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import platform
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "bench"
VENVS = BENCH / ".venvs"
WORK = BENCH / ".work"
HOST = "127.0.0.1"
PG = {"PGHOST": "127.0.0.1", "PGPORT": "5432", "PGUSER": "postgres", "PGDATABASE": "test"}
MARIADB = {"MYSQL_HOST": "127.0.0.1", "MYSQL_PORT": "3306", "MYSQL_USER": "root", "MYSQL_DATABASE": "bench"}
REDIS_URL = "redis://127.0.0.1:6379/0"
DOCKET_REDIS_URL = "redis://127.0.0.1:6379/5"  # fastmcp-tasks' Docket keys, each run under its own prefix
POLL_MS = 100  # the pollIntervalMs every tasks target advertises
QUIET_CORES = 0.5  # other work on the machine above this (in cores) makes a block wait ...
QUIET_WAIT_S = 60.0  # ... at most this long ...
QUIET_BUDGET_S = 900.0  # ... and the whole run at most this long

# Pinned alike in every venv, so the uvicorn targets differ only in the application.
SERVER_PINS = ["uvicorn==0.55.0", "uvloop==0.23.0", "httptools==0.9.0"]
VENV_SPECS = {
    "harness": None,  # filled from pyproject.toml: django_mcp's dependencies + postgres/redis extras
    "fastmcp": ["fastmcp==4.1.4", "fastmcp-tasks==4.1.4", *SERVER_PINS],
    "sdk": ["mcp>=2.3,<2.4", *SERVER_PINS],
    "mcpz": ["django-mcpz==1.2.0", *SERVER_PINS],
}
HARNESS_EXTRA = [
    *SERVER_PINS,
    "matplotlib>=3.8",
    "py-spy>=0.3.14",
    "opentelemetry-sdk>=1.30",
    "opentelemetry-exporter-otlp-proto-http>=1.30",  # the deployed target's exporter and bench/otlp_receiver.py
]


# ---------------------------------------------------------------------------------------------- config


@dataclass
class Scale:
    """Request counts and wall-clock caps. Every loop is bounded by both."""

    rounds: int = 3
    concurrency: tuple[int, ...] = (1, 16, 64)
    warmup_s: float = 0.5
    measure_s: float = 2.0
    max_requests: int = 20_000
    e2e_tasks: dict[int, int] = field(default_factory=lambda: {1: 8, 16: 32, 64: 64})
    e2e_cap_s: float = 6.0
    sleep_ms: int = 200
    seed_small: int = 1_000
    seed_big: int = 1_000_000
    get_sample: int = 2_000
    big_create_concurrency: tuple[int, ...] = (1, 16)
    fastmcp_seed: int = 1_000
    mem_tasks: int = 10_000
    mem_concurrency: int = 16
    mem_warm_s: float = 8.0
    mem_batch_s: float = 10.0
    mem_cap_s: float = 20.0
    xworker_samples: int = 20
    xworker_cap_s: float = 20.0
    goal_concurrency: tuple[int, ...] = (1, 16)  # the concurrencies the goals table judges
    parked_tasks: int = 1_000
    parked_idle_s: float = 15.0
    parked_window_s: float = 30.0
    parked_create_cap_s: float = 60.0
    fanout_listeners: int = 1_000
    fanout_rate: float = 10.0
    fanout_s: float = 10.0
    fanout_open_s: float = 40.0
    fanout_concurrency: int = 4


FULL = Scale()
SMOKE = Scale(
    rounds=1,
    concurrency=(4,),
    warmup_s=0.2,
    measure_s=0.4,
    max_requests=400,
    e2e_tasks={2: 4},
    e2e_cap_s=3.0,
    sleep_ms=50,
    seed_small=200,
    get_sample=200,
    fastmcp_seed=20,
    goal_concurrency=(4,),
)


@dataclass
class Target:
    name: str
    kind: str  # dj | floor | fastmcp | sdk | mcpz
    server: str  # daphne | uvicorn
    store: str  # sqlite | postgres | mysql | memory | redis | -
    venv: str
    scenarios: tuple[str, ...]
    path: str = "/mcp/"
    auth: bool = False  # every request sends a personal token (the endpoint is guarded by BearerAuth)
    env: tuple[tuple[str, str], ...] = ()  # the server's extra environment (e.g. BENCH_RATE_LIMIT)

    @property
    def pg(self) -> bool:
        return self.store == "postgres"


LIMITED = ("BENCH_RATE_LIMIT", "100000000/h")
TRACED = ("BENCH_OTEL", "1")
AUDITED = ("BENCH_AUDIT", "1")
DEPLOYED = ("BENCH_DEPLOYED", "1")  # bench/djbench/settings.py says what it turns on
MCPZ_OAUTH = ("BENCH_MCPZ_AUTH", "oauth")  # bench/mcpz/settings.py
DJANGO_ASGI = ("BENCH_ASGI", "django")  # Django's own ASGI application instead of django_mcp.asgi's


def all_targets() -> list[Target]:
    dj = ("call", "get", "create", "e2e")
    signed = ("call", "get")
    return [
        Target("django_mcp daphne sqlite", "dj", "daphne", "sqlite", "harness", dj),
        Target("django_mcp uvicorn sqlite", "dj", "uvicorn", "sqlite", "harness", dj),
        Target("django_mcp daphne pg", "dj", "daphne", "postgres", "harness", dj),
        Target("django_mcp uvicorn pg", "dj", "uvicorn", "postgres", "harness", dj),
        Target("django_mcp uvicorn mariadb", "dj", "uvicorn", "mysql", "harness", dj),
        # The same endpoint guarded by BearerAuth, each request with a personal token (one indexed query).
        Target("django_mcp daphne sqlite auth", "dj", "daphne", "sqlite", "harness", signed, "/mcp-auth/", True),
        Target("django_mcp uvicorn sqlite auth", "dj", "uvicorn", "sqlite", "harness", signed, "/mcp-auth/", True),
        Target("django_mcp uvicorn pg auth", "dj", "uvicorn", "postgres", "harness", signed, "/mcp-auth/", True),
        # DJANGO_MCP["RATE_LIMIT"] on, at a rate the load never reaches: what counting costs.
        Target("django_mcp uvicorn sqlite limited", "dj", "uvicorn", "sqlite", "harness", signed, env=(LIMITED,)),
        Target("django_mcp uvicorn pg limited", "dj", "uvicorn", "postgres", "harness", signed, env=(LIMITED,)),
        # An OpenTelemetry SDK configured (spans and metrics made, exported nowhere): what tracing costs when
        # on. Every other django_mcp target has opentelemetry-api installed and no provider: tracing off.
        Target("django_mcp uvicorn sqlite traced", "dj", "uvicorn", "sqlite", "harness", signed, env=(TRACED,)),
        Target("django_mcp uvicorn pg traced", "dj", "uvicorn", "postgres", "harness", signed, env=(TRACED,)),
        # DJANGO_MCP["AUDIT"] on: a row per tools/call, written off the request's path.
        Target("django_mcp uvicorn sqlite audited", "dj", "uvicorn", "sqlite", "harness", signed, env=(AUDITED,)),
        Target("django_mcp uvicorn pg audited", "dj", "uvicorn", "postgres", "harness", signed, env=(AUDITED,)),
        # What a team runs after `check --deploy`: PostgreSQL and Redis, sign-in with django-oauth-toolkit's
        # access tokens, rate limits counted in Redis, the audit log, spans and metrics exported over OTLP/HTTP.
        Target(
            "django_mcp uvicorn pg deployed", "dj", "uvicorn", "postgres", "harness", dj, auth=True, env=(DEPLOYED,)
        ),
        # The django_mcp targets serve django_mcp.asgi's application (request threads pooled), as the docs
        # say; this one serves Django's own, to show what the pool is worth.
        Target(
            "django_mcp uvicorn sqlite django-asgi", "dj", "uvicorn", "sqlite", "harness", signed, env=(DJANGO_ASGI,)
        ),
        # The floor: a bare Django async view under Django's own ASGI application, as Django ships it;
        # "pooled": the same view under django_mcp.asgi's.
        Target("floor daphne", "floor", "daphne", "-", "harness", ("get",), "/floor/", env=(DJANGO_ASGI,)),
        Target("floor uvicorn", "floor", "uvicorn", "-", "harness", ("get",), "/floor/", env=(DJANGO_ASGI,)),
        Target("floor uvicorn pooled", "floor", "uvicorn", "-", "harness", ("get",), "/floor/"),
        Target("fastmcp memory", "fastmcp", "uvicorn", "memory", "fastmcp", ("call", "create", "get", "e2e")),
        Target("fastmcp redis", "fastmcp", "uvicorn", "redis", "fastmcp", ("create", "get", "e2e")),
        Target("mcp sdk", "sdk", "uvicorn", "-", "sdk", ("call",)),
        Target("django-mcpz", "mcpz", "uvicorn", "-", "mcpz", ("call",)),
        # The peers with their own sign-in on, as deployed: fastmcp's JWTVerifier (RS256 tokens of an outside
        # authorization server, a static key as a cached JWKS would be) and django-mcpz's OAuth access tokens
        # (its own authorization server's rows, one indexed query per request; SQLite).
        Target("fastmcp deployed", "fastmcp", "uvicorn", "memory", "fastmcp", ("call",), auth=True),
        Target("fastmcp redis deployed", "fastmcp", "uvicorn", "redis", "fastmcp", ("create", "get"), auth=True),
        Target("django-mcpz deployed", "mcpz", "uvicorn", "sqlite", "mcpz", ("call",), auth=True, env=(MCPZ_OAUTH,)),
    ]


# ---------------------------------------------------------------------------------------------- helpers


def log(message: str) -> None:
    print(f"[{datetime.now().strftime('%H:%M:%S')}] {message}", flush=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def tcp_open(host: str, port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex((host, port)) == 0


def redis_up() -> bool:
    try:
        with socket.create_connection((HOST, 6379), timeout=1) as s:
            s.sendall(b"PING\r\n")
            return s.recv(16).startswith(b"+PONG")
    except OSError:
        return False


def rss_kb(pid: int) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def busy_cores(seconds: float = 1.0) -> float | None:
    """How many cores the whole machine kept busy over ``seconds`` (/proc/stat; steal counts as busy)."""

    def read() -> tuple[int, int]:
        values = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
        return sum(values), values[3] + values[4]  # all, idle + iowait

    try:
        total0, idle0 = read()
        time.sleep(seconds)
        total1, idle1 = read()
    except (OSError, ValueError, IndexError):
        return None
    total = total1 - total0
    return round((total - (idle1 - idle0)) / total * (os.cpu_count() or 1), 2) if total > 0 else None


SERVICES = {"postgres", "redis-server"}  # the machine's services this run uses (their CPU counts as this run's)


def cpu_sample() -> tuple[int, int, dict[int, tuple[str, int, int]]]:
    """/proc/stat's total and idle jiffies, and every process's name, CPU jiffies (utime + stime) and start."""
    values = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    processes: dict[int, tuple[str, int, int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            data = Path(f"/proc/{entry.name}/stat").read_text()
        except OSError:
            continue
        name, rest = data[data.index("(") + 1 : data.rindex(")")], data[data.rindex(")") + 2 :].split()
        processes[int(entry.name)] = (name, int(rest[11]) + int(rest[12]), int(rest[19]))
    return sum(values), values[3] + values[4], processes


def others_cores(before: Any, after: Any, ours: set[int]) -> tuple[float | None, list[str]]:
    """Cores kept busy between two samples by processes that are neither this run's nor its services'.

    The machine's busy time, less what this run's processes (servers, load generator) and PostgreSQL and
    Redis used; a process that started and ended in between counts as someone else's.
    """
    total = after[0] - before[0]
    if total <= 0:
        return None, []
    core = total / (os.cpu_count() or 1)
    busy = total - (after[1] - before[1])
    mine = 0
    others: list[tuple[int, str]] = []
    for pid, (name, jiffies, started) in after[2].items():
        earlier = before[2].get(pid)
        used = jiffies - earlier[1] if earlier is not None and earlier[2] == started else jiffies
        if pid in ours or name in SERVICES:
            mine += used
        elif used:
            others.append((used, f"{name} {pid}"))
    top = [f"{name}: {used / core:.2f}" for used, name in sorted(others, reverse=True)[:3] if used / core >= 0.05]
    return round(max(busy - mine, 0) / core, 2), top


def venv_python(name: str) -> Path:
    return VENVS / name / "bin" / "python"


def find_python() -> str:
    """A Python >= 3.12 for the venvs (Django 6.1), like .ci/run looks for it; else this one."""
    candidates = [sys.executable]
    pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    for version in ("3.12", "3.13"):
        candidates += [str(p / "bin" / "python") for p in sorted(pyenv.glob(f"{version}.*"))]
        found = shutil.which(f"python{version}")
        if found:
            candidates.append(found)
    for candidate in candidates:
        probe = subprocess.run(
            [candidate, "-c", "import sys; print(sys.version_info >= (3, 12))"], capture_output=True, text=True
        )
        if probe.stdout.strip() == "True":
            return candidate
    return sys.executable


def harness_requirements() -> list[str]:
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    servers = [*extras["postgres"], *extras["mysql"], *extras["redis"]]
    return [*project["dependencies"], *servers, *extras["otel"], *extras["oauth"], *HARNESS_EXTRA]


def ensure_venv(name: str, base_python: str) -> tuple[bool, str]:
    """Create or reuse bench/.venvs/<name>; returns (ok, note)."""
    requirements = harness_requirements() if name == "harness" else VENV_SPECS[name]
    assert requirements is not None
    stamp_text = json.dumps({"python": base_python, "requirements": requirements})
    venv = VENVS / name
    stamp = venv / ".bench-stamp"
    if stamp.exists() and stamp.read_text() == stamp_text and venv_python(name).exists():
        return True, "reused"
    log(f"building venv {name}: {' '.join(requirements)}")
    shutil.rmtree(venv, ignore_errors=True)
    started = time.monotonic()
    pip_log = WORK / "logs" / f"pip-{name}.log"
    pip_log.parent.mkdir(parents=True, exist_ok=True)
    try:
        with pip_log.open("w") as out:
            subprocess.run([base_python, "-m", "venv", str(venv)], check=True, stdout=out, stderr=subprocess.STDOUT)
            subprocess.run(
                [str(venv_python(name)), "-m", "pip", "install", "-q", "--disable-pip-version-check", *requirements],
                check=True,
                timeout=900,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
        tail = pip_log.read_text(errors="replace")[-1500:]
        return False, f"venv {name} could not be built ({exc}); see {pip_log}: {tail}"
    stamp.write_text(stamp_text)
    return True, f"built in {time.monotonic() - started:.0f} s"


def copy_source(src: Path, packages: tuple[str, ...], files: tuple[str, ...] = ()) -> dict[str, Any]:
    """Copy ``packages`` (and ``files``) of the project into ``src`` as they are now; which code that is."""
    shutil.rmtree(src, ignore_errors=True)
    ignore = shutil.ignore_patterns("__pycache__", "*.sqlite3*")
    for name in packages:
        shutil.copytree(ROOT / name, src / name, ignore=ignore)
    for name in files:
        shutil.copy2(ROOT / name, src / name)
    digest = hashlib.sha256()
    for path in sorted(path for name in packages for path in (src / name).rglob("*.py")):
        digest.update(path.relative_to(src).as_posix().encode() + b"\0" + path.read_bytes())

    def git(*args: str) -> str:
        try:
            return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, timeout=10).stdout.strip()
        except (OSError, subprocess.TimeoutExpired):
            return ""

    dirty = git("status", "--porcelain", "--", *packages)
    return {
        "git_commit": git("rev-parse", "HEAD") or "unknown",
        "uncommitted_changes": bool(dirty),
        "files_changed": dirty.splitlines(),
        "source_sha256": digest.hexdigest(),
    }


def snapshot_source() -> tuple[Path, dict[str, Any]]:
    """Copy django_mcp/ as it is now, so every server of the run serves the same code."""
    src = WORK / "src"
    copied = copy_source(src, ("django_mcp",))
    return src, {key if key == "git_commit" else f"django_mcp_{key}": value for key, value in copied.items()}


def machine() -> dict[str, Any]:
    cpu = "unknown"
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    return {
        "nproc": os.cpu_count(),
        "cpu": cpu,
        "platform": platform.platform(),
        "python_harness": platform.python_version(),
    }


# ---------------------------------------------------------------------------------------------- processes


class Proc:
    """One process of a run, optionally pinned to a core (taskset execs: the PID is the program's); stopped by PID."""

    def __init__(self, name: str, args: list[str], env: dict[str, str], cwd: Path, log_path: Path, core: int | None):
        if core is not None:
            args = ["taskset", "-c", str(core), *args]
        self.name = name
        self.log_path = log_path
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = self.log_path.open("wb")
        self.proc = subprocess.Popen(  # our own interpreter and arguments
            args, cwd=cwd, env=env, stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True
        )
        self.started = time.monotonic()
        self.on_stop: Any = None

    @property
    def pid(self) -> int:
        return self.proc.pid

    def tail(self) -> str:
        with contextlib.suppress(OSError):
            return self.log_path.read_text(errors="replace")[-1500:]
        return ""

    def wait_for(self, ready: Any, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not ready():
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited with {self.proc.returncode}: {self.tail()}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"{self.name} was not ready within {timeout} s: {self.tail()}")
            time.sleep(0.05)

    def stop(self, kill: bool = False, timeout: float = 15) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL if kill else signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)
        self._log.close()
        if self.on_stop is not None:
            self.on_stop(self.pid)


class Server(Proc):
    """One server process of a target on 127.0.0.1, pinned to ``core``."""

    def __init__(self, target: Target, python: str, env: dict[str, str], cwd: Path, pin: bool, core: int = 0) -> None:
        self.target = target
        self.port = free_port()
        factory: list[str] = []
        if target.kind in ("dj", "floor"):
            app = "bench.djbench.asgi:application"
        elif target.kind == "mcpz":
            app = "bench.mcpz.asgi:application"
        else:
            app = f"bench.servers.{'fastmcp' if target.kind == 'fastmcp' else 'sdk'}_server:app"
            factory = ["--factory"]
        if target.server == "daphne":
            args = [python, "-m", "daphne", "-v", "0", "-b", HOST, "-p", str(self.port), app]
        else:
            args = [python, "-m", "uvicorn", *factory, app, "--host", HOST, "--port", str(self.port)]
            args += ["--no-access-log", "--log-level", "warning", "--loop", "uvloop", "--http", "httptools"]
            if not _has_module(python, "uvloop"):  # the smoke run's interpreter may lack them
                args = args[: args.index("--loop")]
        log_path = WORK / "logs" / f"{target.name.replace(' ', '_')}-{self.port}.log"
        super().__init__(target.name, args, env, cwd, log_path, core if pin else None)

    def wait_ready(self, timeout: float = 40.0) -> None:
        self.wait_for(lambda: tcp_open(HOST, self.port), timeout)


_MODULES: dict[tuple[str, str], bool] = {}


def _has_module(python: str, module: str) -> bool:
    key = (python, module)
    if key not in _MODULES:
        probe = subprocess.run([python, "-c", f"import {module}"], capture_output=True)
        _MODULES[key] = probe.returncode == 0
    return _MODULES[key]


class LoadGen:
    """bench/loadgen.py in its own process, pinned to core 1: one JSON job per line in, one result out."""

    def __init__(self, python: str, pin: bool) -> None:
        self.args = [python, str(BENCH / "loadgen.py")]
        if pin:
            self.args = ["taskset", "-c", "1", *self.args]
        self._start()

    def _start(self) -> None:
        self.proc = subprocess.Popen(  # our own interpreter and script
            self.args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1
        )

    def run(self, job: dict[str, Any], timeout: float) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(job) + "\n")
        self.proc.stdin.flush()
        with selectors.DefaultSelector() as sel:
            sel.register(self.proc.stdout, selectors.EVENT_READ)
            if not sel.select(timeout):
                self.stop()
                self._start()
                return {"failed": f"load generator gave no answer within {timeout:.0f} s"}
        line = self.proc.stdout.readline()
        if not line:
            self._start()
            return {"failed": "load generator exited"}
        return json.loads(line)

    def stop(self) -> None:
        if self.proc.poll() is None:
            with contextlib.suppress(OSError):
                assert self.proc.stdin is not None
                self.proc.stdin.close()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)


# ---------------------------------------------------------------------------------------------- the run


class Bench:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.smoke = args.smoke
        self.scale = SMOKE if args.smoke else FULL
        if args.rounds:
            self.scale.rounds = args.rounds
        self.out = Path(args.out).resolve() if args.out else (BENCH / "results")
        self.out.mkdir(parents=True, exist_ok=True)
        self.pin = shutil.which("taskset") is not None and (os.cpu_count() or 1) >= 2
        self.records: list[dict[str, Any]] = []
        self.notes: list[str] = []
        self.tokens: dict[str, str] = {}  # target name -> its personal token (auth targets)
        # Before each block, with none of this run's processes busy, the cores the rest of the machine
        # keeps busy; above QUIET_CORES the block waits (at most QUIET_WAIT_S, QUIET_BUDGET_S in all).
        self.others_busy: float | None = None
        self.live_pids: set[int] = set()  # this run's servers now running
        self.otlp: subprocess.Popen[bytes] | None = None  # bench/otlp_receiver.py, for the deployed target
        self.otlp_port = 0
        self.quiet_budget = 0.0 if args.smoke else QUIET_BUDGET_S
        self.quiet_waited = 0.0
        self.skipped: dict[str, str] = {}
        self.started = time.monotonic()

    # -- environment -------------------------------------------------------------------------

    def prepare(self) -> None:
        WORK.mkdir(parents=True, exist_ok=True)
        self.src, self.source = snapshot_source()
        self.have_pg = tcp_open(HOST, 5432)
        self.have_redis = redis_up()
        self.pythons: dict[str, str] = {}
        if self.smoke:
            # No venv is built: the interpreter running the smoke test serves django_mcp and the floor;
            # fastmcp / SDK run only if their venvs were built by an earlier full run.
            self.pythons["harness"] = sys.executable
            for name in ("fastmcp", "sdk", "mcpz"):
                if (VENVS / name / ".bench-stamp").exists():
                    self.pythons[name] = str(venv_python(name))
        else:
            base = find_python()
            VENVS.mkdir(parents=True, exist_ok=True)
            for name in ("harness", "fastmcp", "sdk", "mcpz"):
                ok, note = ensure_venv(name, base)
                log(f"venv {name}: {note}")
                if ok:
                    self.pythons[name] = str(venv_python(name))
                else:
                    self.notes.append(note)
            if "harness" not in self.pythons:
                raise SystemExit("the harness venv could not be built; see above")
        self.loadgen = LoadGen(self.pythons["harness"], self.pin)
        self.targets: list[Target] = []
        only = set(self.args.targets.split(",")) if self.args.targets else None
        for target in all_targets():
            reason = self._unavailable(target)
            if only is not None and not any(
                target.name == o[1:] if o.startswith("=") else o in target.name for o in only
            ):
                reason = reason or "not selected (--targets)"
            if reason:
                self.skipped[target.name] = reason
            else:
                self.targets.append(target)
        for name, reason in self.skipped.items():
            log(f"skip {name}: {reason}")

    def _unavailable(self, target: Target) -> str | None:
        if target.venv not in self.pythons:
            return f"no {target.venv} venv" + (" (smoke runs build none)" if self.smoke else "")
        python = self.pythons[target.venv]
        if target.server == "uvicorn" and not _has_module(python, "uvicorn"):
            return "uvicorn is not installed in this interpreter"
        if target.pg and not (self.have_pg and self.have_redis):
            return "needs PostgreSQL on 127.0.0.1:5432 and Redis on 127.0.0.1:6379"
        if target.pg and not _has_module(python, "psycopg"):
            return "psycopg is not installed in this interpreter"
        if target.store == "mysql" and not (tcp_open(HOST, 3306) and self.have_redis):
            return "needs MariaDB (or MySQL) on 127.0.0.1:3306 and Redis on 127.0.0.1:6379"
        if target.store == "mysql" and not _has_module(python, "MySQLdb"):
            return "mysqlclient is not installed in this interpreter (the mysql extra)"
        if self.smoke and target.store == "mysql":
            return "smoke runs use SQLite only"
        if target.store == "redis" and not self.have_redis:
            return "needs Redis on 127.0.0.1:6379"
        if self.smoke and target.pg:
            return "smoke runs use SQLite only"
        if self.smoke and target.kind in ("dj", "floor") and target.server != "daphne":
            return "smoke runs serve django_mcp and the floor with daphne only"
        if self.smoke and not self.smoke_scenarios(target):
            return "no smoke scenario (smoke runs tools/call only on fastmcp, the SDK and django-mcpz)"
        return None

    def smoke_scenarios(self, target: Target) -> set[str]:
        return {"dj": {"get", "e2e"}, "floor": {"get"}}.get(target.kind, {"call"}) & set(target.scenarios)

    def env_for(self, target: Target, extra: dict[str, str] | None = None) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "BENCH_", "PG"))}
        env.update(
            PYTHONPATH=os.pathsep.join([str(self.src), str(ROOT)]),
            PYTHONDONTWRITEBYTECODE="1",
            BENCH_POLL_MS=str(POLL_MS),
        )
        if target.kind in ("dj", "floor"):
            env["DJANGO_SETTINGS_MODULE"] = "bench.djbench.settings"
            # A database per source tree served: bench/ab.py's base may predate a migration.
            other = "" if self.src.name == "src" else self.src.name.replace("-", "_")
            if target.pg:
                env.update(PG, BENCH_DB="postgres", BENCH_REDIS=REDIS_URL)
                if other:
                    env["BENCH_PG_SCHEMA"] = f"bench_{other}"
            elif target.store == "mysql":
                env.update(MARIADB, BENCH_DB="mysql", BENCH_REDIS=REDIS_URL)
            else:
                env["BENCH_SQLITE"] = str(WORK / f"{target.server}{'.' + other if other else ''}.sqlite3")
        elif target.kind == "mcpz":
            env["DJANGO_SETTINGS_MODULE"] = "bench.mcpz.settings"
            env["BENCH_SQLITE"] = str(WORK / "mcpz.sqlite3")
        if DEPLOYED in target.env:
            env["BENCH_OTLP"] = f"http://{HOST}:{self.otlp_receiver()}"
        env.update(dict(target.env))
        env.update(extra or {})
        return env

    def python_for(self, target: Target) -> str:
        return self.pythons[target.venv]

    def sign_in(self, target: Target, port: int | None = None) -> dict[str, str]:
        """A token for an authenticated target into ``self.tokens``; returns the extra environment its server
        needs (fastmcp: the public key of its tokens). django-mcpz binds a token to the endpoint's URL, port
        included: minted once its server has a port (before the readiness probe)."""
        if target.kind == "dj":
            self.tokens[target.name] = self.seed(target, ["token"])["token"]
            return {}
        out = WORK / f"token-{uuid.uuid4().hex}.json"
        env: dict[str, str] = {}
        if target.kind == "fastmcp":
            pem = WORK / f"jwt-{uuid.uuid4().hex}.pem"
            args = ["-m", "bench.servers.fastmcp_token", "--public-key", str(pem), "--out", str(out)]
            env["BENCH_JWT_PUBLIC_KEY_FILE"] = str(pem)
        else:
            args = ["-m", "bench.mcpz.token", "--resource", f"http://{HOST}:{port}{target.path}", "--out", str(out)]
        run = subprocess.run(
            [self.python_for(target), *args],
            cwd=self.src,
            env=self.env_for(target),
            capture_output=True,
            text=True,
            timeout=120,
        )
        if run.returncode != 0:
            raise RuntimeError(f"signing in to {target.name} failed: {run.stderr[-1500:]}")
        self.tokens[target.name] = json.loads(out.read_text())["token"]
        out.unlink()
        return env

    def otlp_receiver(self) -> int:
        """The port of this run's OTLP/HTTP receiver (started on first use, on the load generator's core)."""
        if self.otlp is None:
            self.otlp_port = free_port()
            command = [self.pythons["harness"], str(BENCH / "otlp_receiver.py"), "--port", str(self.otlp_port)]
            if self.pin:
                command = ["taskset", "-c", "1", *command]
            self.otlp = subprocess.Popen(command, cwd=ROOT)
            for _ in range(100):
                if tcp_open(HOST, self.otlp_port):
                    break
                time.sleep(0.05)
            else:
                raise RuntimeError("the OTLP receiver did not start")
        return self.otlp_port

    def otlp_counts(self) -> dict[str, int]:
        """What the OTLP receiver has been sent so far: spans, posts, bytes."""
        import urllib.request

        with urllib.request.urlopen(f"http://{HOST}:{self.otlp_port}/counts", timeout=5) as answer:
            counts: dict[str, int] = json.loads(answer.read())
            return counts

    def seed(self, target: Target, command: list[str], timeout: float = 300) -> dict[str, Any]:
        out = WORK / f"seed-{uuid.uuid4().hex}.json"
        run = subprocess.run(
            [
                self.python_for(target),
                "-m",
                "bench.seed",
                *command,
                *(["--out", str(out)] if command[0] in ("reset", "pgstats", "token") else []),
            ],
            cwd=self.src,
            env=self.env_for(target),
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if run.returncode != 0:
            raise RuntimeError(f"seed {' '.join(command)} failed: {run.stderr[-1500:]}")
        if command[0] not in ("reset", "pgstats", "token"):
            return {}
        data = json.loads(out.read_text())
        out.unlink()
        return data

    # -- jobs ------------------------------------------------------------------------------------

    def job(self, job: dict[str, Any], cap: float) -> dict[str, Any]:
        """Run one load generator job; its result says how many cores other work took meanwhile."""
        try:
            before = cpu_sample()
        except (OSError, ValueError, IndexError):
            before = None
        result = self.loadgen.run(job, timeout=cap + 90)
        if before is not None and job.get("kind") != "probe":
            with contextlib.suppress(OSError, ValueError, IndexError):
                ours = {*self.live_pids, self.loadgen.proc.pid, os.getpid()}
                result["others_cores"], result["others_top"] = others_cores(before, cpu_sample(), ours)
        return result

    def base_job(self, server: Server, path: str | None = None) -> dict[str, Any]:
        job: dict[str, Any] = {"host": HOST, "port": server.port, "path": path or server.target.path}
        if server.target.auth:
            job["headers"] = {"Authorization": f"Bearer {self.tokens[server.target.name]}"}
        return job

    def record(
        self,
        target: Target,
        round_no: int,
        scenario: str,
        concurrency: int | None,
        result: dict[str, Any],
        **extra: Any,
    ) -> None:
        entry = {
            "target": target.name,
            "round": round_no,
            "scenario": scenario,
            "concurrency": concurrency,
            **extra,
            # The machine's 1-minute load average after the point: this run keeps about 2 busy (a
            # server and the load generator); more means other work on the machine shared its cores.
            "loadavg": round(os.getloadavg()[0], 2),
            "others_busy_cores": self.others_busy,
            "result": result,
        }
        self.records.append(entry)
        summary = ""
        if "final_state_received" in result:
            summary = (
                f"{result['rps']:>8.1f} req/s  p99 {result['latency_ms']['p99']} ms with {result['listeners']} "
                f"listeners (none: p99 {result['quiet']['latency_ms']['p99']} ms); final state to "
                f"{result['final_state_received']}"
            )
        elif "rps" in result and "latency_ms" in result:
            latency = result["latency_ms"]
            summary = f"{result['rps']:>8.1f} req/s  p50 {latency['p50']} ms  p99 {latency['p99']} ms"
        elif "lag_ms" in result:
            lag = result["lag_ms"]
            summary = f"lag p50 {lag['p50']} ms p99 {lag['p99']} ms, {result.get('requests_per_task')} req/task"
        elif "cancel_seen_ms" in result:
            summary = f"cancel seen p50 {result['cancel_seen_ms']['p50']} ms p99 {result['cancel_seen_ms']['p99']} ms"
        elif "parked_queries_per_min" in result:
            summary = (
                f"{result['parked']} parked: {result['parked_queries_per_min']} statements/min "
                f"(idle {result['idle_queries_per_min']}), {result['queries_per_min_per_task']} per task per min"
            )
        elif "retained_kb_per_task" in result:
            summary = (
                f"retained {result['retained_kb_per_task']} KB/task ({result['retained_created']}; first batch "
                f"{result['first_batch_kb_per_task']}), running {result['running_kb_per_task']} KB/task "
                f"({result['running_created']})"
            )
        if result.get("errors"):
            summary += f"  errors {result['errors']}: {result.get('sample_error')}"
        if result.get("failed") or result.get("unsupported"):
            summary += f"  {result.get('failed') or result.get('unsupported')}"
        label = scenario + (f" c={concurrency}" if concurrency else "")
        log(f"  {target.name:<26} {label:<20} {summary}")

    def closed_loop(
        self,
        server: Server,
        requests: list[dict[str, Any]],
        expect: str,
        concurrency: int,
        path: str | None = None,
        measure_s: float | None = None,
    ) -> dict[str, Any]:
        s = self.scale
        measure = measure_s or s.measure_s
        job = {
            "kind": "closed_loop",
            **self.base_job(server, path),
            "requests": requests,
            "expect": expect,
            "concurrency": concurrency,
            "max_requests": s.max_requests,
            "max_seconds": measure,
            "warmup_s": s.warmup_s,
        }
        return self.job(job, measure + s.warmup_s)

    def make_template(self, server: Server) -> None:
        """One instant task through the API, completed: what seed.py copies."""
        handle = self.job(
            {
                "kind": "create_many",
                **self.base_job(server),
                "count": 1,
                "concurrency": 1,
                "tool": "instant",
                "max_seconds": 10,
                "wait_terminal": True,
                "wait_seconds": 10,
            },
            20,
        )
        if handle.get("created") != 1 or handle.get("last_status") != "completed":
            raise RuntimeError(f"could not create the template task: {handle}")

    # -- blocks ----------------------------------------------------------------------------------

    def start(self, target: Target, extra_env: dict[str, str] | None = None, core: int = 0) -> Server:
        server = Server(target, self.python_for(target), self.env_for(target, extra_env), self.src, self.pin, core)
        self.live_pids.add(server.pid)
        server.on_stop = self.live_pids.discard
        try:
            if target.auth and target.kind == "mcpz":
                self.sign_in(target, server.port)
            server.wait_ready()
            probe = (
                {"method": "server/discover", "params": {}}
                if target.kind != "floor"
                else {"method": "tasks/get", "params": {"taskId": "x"}, "tasks": True}
            )
            answer = self.job({"kind": "probe", **self.base_job(server), "request": probe}, 10)
            if answer.get("status") != 200:
                raise RuntimeError(f"{target.name} answered {answer}")
        except Exception:
            server.stop(kill=True)
            raise
        return server

    def block(self, target: Target, round_no: int) -> None:
        """Every scenario of one target, on a fresh server (smoke: one or two tiny ones)."""
        s = self.scale
        scenarios = set(target.scenarios)
        if self.smoke:
            scenarios = self.smoke_scenarios(target)
        extra: dict[str, str] = {}
        docket_name = None
        if target.kind == "fastmcp":
            docket_name = f"bench-{uuid.uuid4().hex[:10]}"
            extra = {
                "BENCH_DOCKET_URL": "memory://" if target.store == "memory" else DOCKET_REDIS_URL,
                "BENCH_DOCKET_NAME": docket_name,
            }
        if target.auth and target.kind != "mcpz":  # before the server starts: its readiness probe signs in too
            extra.update(self.sign_in(target))
        server = self.start(target, extra)
        try:
            ids: list[str] = []
            if target.kind == "dj":
                self.make_template(server)
                seeded = self.seed(target, ["reset", "--tasks", str(s.seed_small), "--sample", str(s.get_sample)])
                ids = seeded["ids"]
            if "call" in scenarios:
                call = [{"method": "tools/call", "params": {"name": "echo", "arguments": {"text": "hello"}}}]
                for c in s.concurrency:
                    self.record(target, round_no, "tools/call", c, self.closed_loop(server, call, '"text":"hello"', c))
            if "get" in scenarios:
                if target.kind == "floor":
                    ids = ["0b9c6b53-5d3e-4a8e-9d56-1f1b8e6a2c41"]
                elif target.kind == "fastmcp":
                    made = self.job(
                        {
                            "kind": "create_many",
                            **self.base_job(server),
                            "count": s.fastmcp_seed,
                            "concurrency": 16,
                            "tool": "instant",
                            "max_seconds": 60,
                            "wait_terminal": True,
                            "return_ids": s.fastmcp_seed,
                        },
                        120,
                    )
                    ids = made.get("ids", [])
                    if not ids or made.get("unfinished") or made.get("last_status") != "completed":
                        raise RuntimeError(f"could not fill {target.name}: {made}")
                gets = [{"method": "tasks/get", "params": {"taskId": i}, "tasks": True} for i in ids]
                for c in s.concurrency:
                    self.record(
                        target,
                        round_no,
                        "tasks/get",
                        c,
                        self.closed_loop(server, gets, '"status":"completed"', c),
                        stored=s.seed_small if target.kind != "floor" else None,
                    )
            if "e2e" in scenarios:
                for mode in ("listen",) if self.smoke else ("poll", "listen"):
                    for c, n in s.e2e_tasks.items():
                        job = {
                            "kind": "e2e",
                            **self.base_job(server),
                            "mode": mode,
                            "sleep_ms": s.sleep_ms,
                            "tasks": n,
                            "concurrency": c,
                            "max_seconds": s.e2e_cap_s,
                        }
                        result = self.job(job, s.e2e_cap_s + s.sleep_ms / 1000 + 60)
                        self.record(target, round_no, f"e2e {mode}", c, result)
                        if result.get("unsupported"):
                            break
            if "create" in scenarios:  # last: a queue-backed server may still be working off these
                create = [{"method": "tools/call", "params": {"name": "instant", "arguments": {}}, "tasks": True}]
                for c in s.concurrency:
                    self.record(
                        target, round_no, "create", c, self.closed_loop(server, create, '"resultType":"task"', c)
                    )
        finally:
            server.stop()
            if docket_name and target.store == "redis":
                with contextlib.suppress(Exception):
                    self.seed(target, ["redis-clean", "--url", DOCKET_REDIS_URL, "--prefix", docket_name], timeout=60)

    def block_big(self, target: Target, round_no: int) -> None:
        """tasks/get (and create) with ``seed_big`` tasks stored (PostgreSQL)."""
        s = self.scale
        server = self.start(target)
        try:
            gets = [{"method": "tasks/get", "params": {"taskId": i}, "tasks": True} for i in self.big_ids]
            for c in s.concurrency:
                self.record(
                    target,
                    round_no,
                    "tasks/get",
                    c,
                    self.closed_loop(server, gets, '"status":"completed"', c),
                    stored=s.seed_big,
                )
            create = [{"method": "tools/call", "params": {"name": "instant", "arguments": {}}, "tasks": True}]
            for c in s.big_create_concurrency:
                self.record(
                    target,
                    round_no,
                    "create",
                    c,
                    self.closed_loop(server, create, '"resultType":"task"', c),
                    stored=s.seed_big,
                )
        finally:
            server.stop()

    def block_xworker(self, target: Target, round_no: int) -> None:
        """Create on worker A, cancel on worker B, ``cancelled`` seen on B's listen stream."""
        s = self.scale
        self.seed(target, ["clear"])
        a = self.start(target)
        try:
            b = self.start(target)
            try:
                job = {
                    "kind": "xworker_cancel",
                    "host": HOST,
                    "port_a": a.port,
                    "port_b": b.port,
                    "path": "/mcp/",
                    "samples": s.xworker_samples,
                    "max_seconds": s.xworker_cap_s,
                }
                self.record(target, round_no, "cross-worker cancel", None, self.job(job, s.xworker_cap_s))
            finally:
                b.stop()
        finally:
            a.stop()

    def block_memory(self, target: Target) -> None:
        """RSS growth of one worker: finished (retained) tasks, then running (sleeping) ones.

        After a warm-up batch, two batches of instant tasks (each up to ``mem_tasks``, capped at
        ``mem_batch_s``) are created and finished: the second batch's growth per task is the steady
        cost of a retained task (the first one's is reported too). Then up to ``mem_tasks`` tasks that
        sleep for an hour are started (capped at ``mem_cap_s``): the growth per task is what one running
        task costs. The worker is then killed.
        """
        s = self.scale
        extra: dict[str, str] = {}
        docket_name = None
        if target.kind == "fastmcp":
            docket_name = f"bench-{uuid.uuid4().hex[:10]}"
            extra = {
                "BENCH_DOCKET_URL": "memory://" if target.store == "memory" else DOCKET_REDIS_URL,
                "BENCH_DOCKET_NAME": docket_name,
            }
        if target.kind == "dj":
            self.seed(target, ["clear"])
        if target.auth and target.name not in self.tokens:  # a run of this phase alone (--phases memory)
            self.tokens[target.name] = self.seed(target, ["token"])["token"]
        server = self.start(target, extra)
        try:
            base = self.base_job(server)

            def batch(tool: str, cap: float, wait: bool, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
                job = {
                    "kind": "create_many",
                    **base,
                    "count": s.mem_tasks,
                    "concurrency": s.mem_concurrency,
                    "tool": tool,
                    "arguments": arguments or {},
                    "max_seconds": cap,
                    "wait_terminal": wait,
                    "wait_seconds": 90,
                }
                return self.job(job, cap + 90)

            warm = batch("instant", s.mem_warm_s, True)  # lazy imports, caches, allocator arenas, pools
            time.sleep(1.0)
            rss0 = rss_kb(server.pid)
            first = batch("instant", s.mem_batch_s, True)
            time.sleep(1.0)
            rss1 = rss_kb(server.pid)
            second = batch("instant", s.mem_batch_s, True)
            time.sleep(1.0)
            rss2 = rss_kb(server.pid)
            running = batch("sleep", s.mem_cap_s, False, {"ms": 3_600_000})
            time.sleep(2.0)
            rss3 = rss_kb(server.pid)
            alive = self.job({"kind": "probe", **base, "request": {"method": "server/discover", "params": {}}}, 10)

            def per_task(grow_from: int | None, grow_to: int | None, count: int | None) -> float | None:
                return round((grow_to - grow_from) / count, 3) if grow_from and grow_to and count else None

            result: dict[str, Any] = {
                "warmup_created": warm.get("created"),
                "rss_kb": [rss0, rss1, rss2, rss3],
                "first_batch_created": first.get("created"),
                "first_batch_kb_per_task": per_task(rss0, rss1, first.get("created")),
                "retained_created": second.get("created"),
                "retained_create_rps": second.get("rps"),
                "retained_unfinished": (first.get("unfinished") or 0) + (second.get("unfinished") or 0),
                "retained_kb_per_task": per_task(rss1, rss2, second.get("created")),
                "running_created": running.get("created"),
                "running_create_rps": running.get("rps"),
                "running_kb_per_task": per_task(rss2, rss3, running.get("created")),
                "server_alive": alive.get("status") == 200,
                "errors": sum(b.get("errors") or 0 for b in (first, second, running)),
                "sample_error": first.get("sample_error") or second.get("sample_error") or running.get("sample_error"),
            }
            self.record(target, 1, "memory", None, result)
        finally:
            server.stop(kill=True)  # thousands of sleeping tasks: no graceful shutdown wanted
            if target.kind == "dj":
                with contextlib.suppress(Exception):
                    self.seed(target, ["clear"])
            if docket_name and target.store == "redis":
                with contextlib.suppress(Exception):
                    self.seed(target, ["redis-clean", "--url", DOCKET_REDIS_URL, "--prefix", docket_name], timeout=120)

    def block_parked(self, target: Target) -> None:
        """SQL statements per minute while ``parked_tasks`` tasks wait in ``input_required``.

        The server counts every statement it sends (``BENCH_COUNT_QUERIES=1``, ``/bench/queries/``).
        First ``parked_idle_s`` with no task (the maintenance loop alone), then ``parked_tasks`` tasks of
        the ``ask`` tool are created and seen ``input_required``, and after 2 s of settling the
        statements of the next ``parked_window_s`` (no client traffic) are counted. The per-task figure
        is (parked − idle) statements per minute / parked tasks: ~0 when only the maintenance loop's
        batched queries run; a per-task poll at any useful rate would make it ≥ 1. On PostgreSQL the
        database's own ``xact_commit`` delta of the window (every client of that database) is shown too.
        """
        s = self.scale
        self.seed(target, ["clear"])
        server = self.start(target, {"BENCH_COUNT_QUERIES": "1"})
        try:
            base = self.base_job(server)

            def counted() -> dict[str, Any]:
                answer = self.job(
                    {"kind": "probe", **base, "path": "/bench/queries/", "request": {"method": "bench", "params": {}}},
                    10,
                )
                data = json.loads(answer.get("body") or "{}")
                if not data.get("enabled"):
                    raise RuntimeError(f"the server does not count its queries: {answer}")
                return data

            def per_minute(a: dict[str, Any], b: dict[str, Any]) -> float:
                return round((b["total"] - a["total"]) * 60 / max(b["at"] - a["at"], 1e-9), 2)

            def statements(a: dict[str, Any], b: dict[str, Any]) -> dict[str, int]:
                grown = {k: n - a["by_statement"].get(k, 0) for k, n in b["by_statement"].items()}
                return {k: n for k, n in sorted(grown.items(), key=lambda kv: -kv[1]) if n > 0}

            time.sleep(1.0)
            idle0 = counted()
            time.sleep(s.parked_idle_s)
            idle1 = counted()
            made = self.job(
                {
                    "kind": "create_many",
                    **base,
                    "count": s.parked_tasks,
                    "concurrency": 16,
                    "tool": "ask",
                    "capabilities": {"elicitation": {}},
                    "max_seconds": s.parked_create_cap_s,
                    "wait_terminal": True,
                    "wait_for": ["input_required"],
                    "wait_seconds": 90,
                    "return_ids": 1,
                },
                s.parked_create_cap_s + 120,
            )
            parked = made.get("created") or 0
            if made.get("errors") or made.get("unfinished") or made.get("last_status") != "input_required":
                raise RuntimeError(f"could not park {s.parked_tasks} tasks: {made}")
            time.sleep(2.0)
            pg0 = self.seed(target, ["pgstats"], timeout=60) if target.pg else {}
            parked0 = counted()
            time.sleep(s.parked_window_s)
            parked1 = counted()
            pg1 = self.seed(target, ["pgstats"], timeout=60) if target.pg else {}
            still = self.job(
                {
                    "kind": "probe",
                    **base,
                    "request": {"method": "tasks/get", "params": {"taskId": made["ids"][0]}, "tasks": True},
                },
                10,
            )
            idle_rate, parked_rate = per_minute(idle0, idle1), per_minute(parked0, parked1)
            result: dict[str, Any] = {
                "parked": parked,
                "parked_create_rps": made.get("rps"),
                "still_parked": '"status":"input_required"' in (still.get("body") or ""),
                "idle_s": round(idle1["at"] - idle0["at"], 1),
                "window_s": round(parked1["at"] - parked0["at"], 1),
                "idle_queries_per_min": idle_rate,
                "parked_queries_per_min": parked_rate,
                "queries_per_min_per_task": round((parked_rate - idle_rate) / parked, 4) if parked else None,
                "idle_statements": statements(idle0, idle1),
                "parked_statements": statements(parked0, parked1),
                "errors": made.get("errors") or 0,
            }
            if pg0 and pg1:
                seconds = max(pg1["at"] - pg0["at"], 1e-9)
                result["pg_xact_commit_per_min"] = round((pg1["xact_commit"] - pg0["xact_commit"]) * 60 / seconds, 2)
                result["pg_task_table_scans_per_min"] = round((pg1["task_scans"] - pg0["task_scans"]) * 60 / seconds, 2)
            self.record(target, 1, "parked", None, result)
        finally:
            server.stop(kill=True)  # a thousand parked tasks: no graceful shutdown wanted
            with contextlib.suppress(Exception):
                self.seed(target, ["clear"])

    def block_fanout(self, target: Target) -> None:
        """A plain ``tools/call``'s latency while ``fanout_listeners`` listen streams follow one task.

        The task (``ticking``) updates its status ``fanout_rate`` times a second; ``fanout_concurrency``
        clients call ``echo`` for ``fanout_s`` before any stream is open, then again with the listeners
        open on the same worker; afterwards every listener must have received the task's final state.
        """
        s = self.scale
        server = self.start(target, {"BENCH_LISTENERS_UNCAPPED": "1"})
        try:
            job = {
                "kind": "fanout",
                **self.base_job(server),
                "listeners": s.fanout_listeners,
                "rate": s.fanout_rate,
                "seconds": s.fanout_s,
                "open_allowance_s": s.fanout_open_s,
                "concurrency": s.fanout_concurrency,
                "call": {"method": "tools/call", "params": {"name": "echo", "arguments": {"text": "fan"}}},
                "expect": '"text":"fan"',
            }
            cap = 2 * s.fanout_s + s.fanout_open_s + 60
            result = self.job(job, cap)
            self.record(target, 1, "fanout", None, {**result, "concurrency": s.fanout_concurrency})
        finally:
            server.stop(kill=True)  # a thousand open streams: no graceful shutdown wanted

    def wait_quiet(self) -> None:
        """Wait (bounded) until other work on the machine leaves the cores alone; note what it was."""
        started = time.monotonic()
        while True:
            busy = busy_cores(1.0)
            self.others_busy = busy
            waited = time.monotonic() - started
            if (
                busy is None
                or busy <= QUIET_CORES
                or waited >= QUIET_WAIT_S
                or self.quiet_waited + waited >= self.quiet_budget
            ):
                break
            time.sleep(2.0)
        waited = time.monotonic() - started - 1.0
        if waited > 0.5:
            self.quiet_waited += waited
            log(f"  waited {waited:.0f} s for other work on the machine ({busy} cores busy at the end)")

    def guarded(self, what: str, target: Target, fn: Any, *args: Any) -> None:
        if not self.smoke:
            self.wait_quiet()
        try:
            fn(target, *args)
        except Exception as exc:  # one target failing must not end the run; it is recorded
            log(f"  {target.name}: {what} FAILED: {exc}")
            self.records.append(
                {
                    "target": target.name,
                    "scenario": what,
                    "round": args[0] if args else None,
                    "concurrency": None,
                    "result": {"failed": str(exc)[:1500]},
                }
            )

    def run(self) -> None:
        s = self.scale
        self.prepare()
        dj = [t for t in self.targets if t.kind in ("dj", "floor")]
        for target in dj:
            if target.kind == "dj":
                self.seed(target, ["migrate"], timeout=120)
        if "main" in self.args.phases.split(","):
            log(
                f"main phase: {len(self.targets)} targets x {s.rounds} rounds (interleaved), "
                f"{s.seed_small} tasks stored"
            )
        phases = set(self.args.phases.split(","))
        for round_no in range(1, s.rounds + 1) if "main" in phases else ():
            log(f"round {round_no}/{s.rounds}")
            for target in self.targets:
                self.guarded("block", target, self.block, round_no)
        # The phases below measure the plain targets (no feature switched on), and tracing's memory.
        plain = [t for t in self.targets if t.kind == "dj" and not t.auth and not t.env]
        pg = [t for t in plain if t.pg]
        if pg and not self.smoke and "xworker" in phases:
            log("cross-worker phase: create on A, cancel on B, seen on B's listen stream")
            for round_no in range(1, s.rounds + 1):
                for target in pg:
                    self.guarded("cross-worker cancel", target, self.block_xworker, round_no)
        if not self.smoke and "memory" in phases:
            mem = [
                t
                for t in self.targets
                if (t in plain and t.server == "uvicorn")
                or (t.kind == "dj" and TRACED in t.env)
                or (t.kind == "fastmcp" and not t.auth)
            ]
            log(
                f"memory phase: batches of up to {s.mem_tasks} tasks "
                f"({s.mem_batch_s:.0f} s cap retained, {s.mem_cap_s:.0f} s running)"
            )
            for target in mem:
                self.guarded("memory", target, self.block_memory)
        on_uvicorn = [t for t in plain if t.server == "uvicorn"]
        for phase, what, block in (
            (
                "parked",
                f"SQL statements per minute with {s.parked_tasks} tasks in input_required "
                f"({s.parked_window_s:.0f} s window, {s.parked_idle_s:.0f} s idle before)",
                self.block_parked,
            ),
            (
                "fanout",
                f"tools/call while {s.fanout_listeners} listeners follow one task updating "
                f"{s.fanout_rate:g} times a second",
                self.block_fanout,
            ),
        ):
            if not self.smoke and phase in phases:
                log(f"{phase} phase: {what}")
                for target in on_uvicorn:
                    self.guarded(phase, target, block)
        if pg and not self.smoke and "big" in phases:
            log(f"big phase: {s.seed_big} tasks stored (PostgreSQL)")
            try:
                first = self.start(pg[0])
                try:
                    self.make_template(first)
                    seeded = self.seed(
                        pg[0], ["reset", "--tasks", str(s.seed_big), "--sample", str(s.get_sample)], timeout=900
                    )
                finally:
                    first.stop()
                self.big_ids = seeded["ids"]
                log(f"  seeded {s.seed_big} rows in {seeded['seconds']} s")
                for round_no in range(1, s.rounds + 1):
                    for target in pg:
                        self.guarded("big", target, self.block_big, round_no)
            except Exception as exc:
                log(f"big phase FAILED: {exc}")
                self.notes.append(f"big phase failed: {exc}")
            finally:
                with contextlib.suppress(Exception):
                    self.seed(pg[0], ["clear"])
        self.loadgen.stop()
        if self.otlp is not None:
            with contextlib.suppress(OSError, ValueError):
                counts = self.otlp_counts()
                self.notes.append(
                    f"the deployed target exported {counts['spans']} spans in {counts['span_posts']} posts and "
                    f"{counts['metric_posts']} metric exports ({counts['bytes']} bytes) to the OTLP receiver"
                )
            self.otlp.terminate()
            self.otlp.wait(10)
        self.finish()

    def finish(self) -> None:
        wall = time.monotonic() - self.started
        data = {
            "meta": {
                "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
                "mode": "smoke" if self.smoke else "full",
                "machine": machine(),
                **self.source,
                "wall_clock_s": round(wall, 1),
                "waited_for_quiet_s": round(self.quiet_waited, 1),
                "pinned": self.pin,
                "pythons": self.pythons,
                "versions": self.versions(),
            },
            "config": {**self.scale.__dict__, "poll_interval_ms": POLL_MS},
            "skipped": self.skipped,
            "notes": self.notes,
            "records": self.records,
        }
        raw = self.out / "results.json"
        raw.write_text(json.dumps(data, indent=1, default=str))
        report = subprocess.run(
            [self.pythons["harness"], str(BENCH / "report.py"), str(raw)], capture_output=True, text=True, timeout=120
        )
        sys.stdout.write(report.stdout)
        if report.returncode != 0:
            sys.stderr.write(report.stderr)
            raise SystemExit("the report could not be written")
        log(f"done in {wall:.0f} s: {raw}, {self.out / 'results.md'}")

    def versions(self) -> dict[str, str]:
        versions: dict[str, str] = {}
        packages = {
            "harness": ["django", "django-ninja", "channels", "channels-redis", "daphne", "uvicorn", "psycopg"],
            "fastmcp": ["fastmcp", "fastmcp-tasks", "mcp", "pydocket", "uvicorn"],
            "sdk": ["mcp", "uvicorn"],
            "mcpz": ["django-mcpz", "django", "msgspec", "uvicorn"],
        }
        for venv, names in packages.items():
            python = self.pythons.get(venv)
            if python is None:
                continue
            code = (
                "import importlib.metadata as m, json, sys\nout = {}\nfor n in sys.argv[1:]:\n"
                "    try: out[n] = m.version(n)\n    except m.PackageNotFoundError: pass\nprint(json.dumps(out))"
            )
            probe = subprocess.run([python, "-c", code, *names], capture_output=True, text=True)
            with contextlib.suppress(ValueError):
                for name, version in json.loads(probe.stdout).items():
                    versions[f"{venv}:{name}"] = version
        return versions


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--smoke", action="store_true", help="~10 s: one tiny scenario per available target")
    parser.add_argument("--out", help="where to write results.{json,md,png} (default bench/results/)")
    parser.add_argument("--rounds", type=int, help="interleaved rounds (default 3; smoke 1)")
    parser.add_argument(
        "--targets",
        help="comma-separated substrings of target names to run, or =NAME for that target alone (default all)",
    )
    parser.add_argument(
        "--phases",
        default="main,xworker,memory,parked,fanout,big",
        help="comma-separated phases to run (default all: main,xworker,memory,parked,fanout,big)",
    )
    parser.add_argument(
        "--work", help="scratch directory: SQLite files, logs, the source snapshot (default bench/.work/)"
    )
    args = parser.parse_args()
    if args.work:
        global WORK
        WORK = Path(args.work).resolve()
    Bench(args).run()


if __name__ == "__main__":
    main()
