"""Start real server processes on 127.0.0.1 for live tests, and stop exactly those."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[2]


def migrate(env: dict[str, str]) -> None:
    """``manage.py migrate`` for the settings and database ``env`` names (added to this process's)."""
    subprocess.run(
        [sys.executable, "-m", "django", "migrate", "--noinput", "-v", "0"],
        cwd=ROOT,
        env={**os.environ, **env},
        check=True,
        timeout=120,
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def server_process(args: list[str], env: dict[str, str] | None = None, ready_path: str = "/mcp/") -> Iterator[str]:
    """Run ``python <args...>`` with a ``{port}`` placeholder filled in; yield its base URL once it answers."""
    handle = start(args, env=env, ready_path=ready_path)
    try:
        yield handle.base
    finally:
        handle.stop()


class ServerHandle:
    """A started server process: its base URL and how to stop it (by its PID only)."""

    def __init__(self, proc: subprocess.Popen[bytes], base: str, log: IO[bytes]) -> None:
        self.proc, self.base, self.log = proc, base, log

    def output(self) -> str:
        return read_log(self.log)

    def stop(self) -> None:
        terminate(self.proc)
        self.log.close()


def read_log(log: IO[bytes]) -> str:
    """What a process wrote to ``log`` so far (pread: the file offset it shares with the process stays put)."""
    fd = log.fileno()
    return os.pread(fd, os.fstat(fd).st_size, 0).decode(errors="replace")


def terminate(proc: subprocess.Popen[bytes], sig: int = signal.SIGTERM, timeout: float = 15) -> None:
    """Send ``sig`` to a process we started, by its PID; kill it if it has not exited within ``timeout``."""
    if proc.poll() is None:
        proc.send_signal(sig)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)


def start(
    args: list[str],
    *,
    env: dict[str, str] | None = None,
    ready_path: str = "/mcp/",
    python: str = sys.executable,
    cwd: Path = ROOT,
    inherit_env: bool = True,
) -> ServerHandle:
    """Run ``python <args...>`` (a ``{port}`` placeholder filled in) in ``cwd``; return once ``ready_path`` answers.

    ``env`` is added to this process's environment, or with ``inherit_env=False`` is the whole of it.
    """
    port = free_port()
    cmd = [python, *[a.replace("{port}", str(port)) for a in args]]
    # A file, not a pipe: a busy server would block on a full pipe nobody reads.
    log = tempfile.TemporaryFile()
    environment = {**os.environ, **(env or {})} if inherit_env else dict(env or {})
    proc = subprocess.Popen(cmd, cwd=cwd, env=environment, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    handle = ServerHandle(proc, f"http://127.0.0.1:{port}", log)
    deadline = time.monotonic() + 30
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"{cmd[1:]} exited with {proc.returncode}:\n{handle.output()}")
        try:
            httpx.get(handle.base + ready_path, timeout=1)
            return handle
        except httpx.TransportError:
            if time.monotonic() > deadline:
                handle.stop()
                raise RuntimeError(f"{cmd[1:]} did not answer within 30 s:\n{handle.output()}") from None
            time.sleep(0.1)


class Daphne:
    """One daphne process serving tests.asgi, restartable, signalled and stopped by PID only.

    ``quiet``: daphne's own access log off, so its log holds what the project logged (WARNING and above).
    """

    def __init__(self, env: dict[str, str], *, quiet: bool = False) -> None:
        self.env, self.quiet = env, quiet
        self.handle: ServerHandle | None = None

    def start(self) -> Daphne:
        verbosity = ["-v", "0"] if self.quiet else []
        args = ["-m", "daphne", *verbosity, "-b", "127.0.0.1", "-p", "{port}", "tests.asgi:application"]
        self.handle = start(args, env=self.env)
        return self

    @property
    def running(self) -> ServerHandle:
        assert self.handle is not None, "not started"
        return self.handle

    @property
    def url(self) -> str:
        """The tasks test server's endpoint."""
        return self.running.base + "/mcp-tasks/"

    def stop(self) -> None:
        if self.handle is not None:
            self.handle.stop()
            self.handle = None

    def signal(self, sig: int) -> None:
        os.kill(self.running.proc.pid, sig)

    def wait_exit(self, timeout: float) -> int:
        return self.running.proc.wait(timeout=timeout)

    def log(self) -> str:
        """Everything the process logged so far."""
        return self.running.output()


class Redis:
    """A private redis-server on a free loopback port, started and stopped by PID; no persistence, or an
    append-only file in ``persist_in`` (what a queue broker's Redis has: its jobs survive a restart)."""

    def __init__(self, persist_in: Path | None = None) -> None:
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None
        self.persist_in = persist_in

    def start(self) -> None:
        persistence = ["--appendonly", "no"]
        if self.persist_in is not None:
            self.persist_in.mkdir(parents=True, exist_ok=True)
            persistence = ["--appendonly", "yes", "--appendfsync", "always", "--dir", str(self.persist_in)]
        self.proc = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", *persistence],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        while subprocess.run(["redis-cli", "-p", str(self.port), "ping"], capture_output=True).stdout != b"PONG\n":
            assert time.monotonic() < deadline, "redis did not start"
            time.sleep(0.05)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=10)
        self.proc = None


SERVER_DATABASE = os.environ.get("DJANGO_MCP_DATABASE", "sqlite")
"""The suite's database: ``postgres`` or ``mysql`` (MariaDB, MySQL) are servers that processes share."""

needs_a_database_server = pytest.mark.skipif(
    SERVER_DATABASE not in ("postgres", "mysql"), reason="processes share a PostgreSQL or MariaDB database"
)

CLUSTER_MARKS = [
    pytest.mark.live,
    # Sets the test database up (the processes share it) and empties it after each test.
    pytest.mark.django_db(transaction=True),
    needs_a_database_server,
    pytest.mark.skipif(shutil.which("redis-server") is None, reason="needs redis-server"),
    pytest.mark.timeout(240),
]
"""The marks of a live module whose web and worker processes share the suite's database and a Redis."""


def cluster_env(database: str, redis: Redis, lease: float, grace: float) -> dict[str, str]:
    """The environment of processes sharing the suite's test database (PostgreSQL or MariaDB) and a private
    Redis (tests.settings)."""
    return {
        "DJANGO_SETTINGS_MODULE": "tests.settings",
        "DJANGO_MCP_DATABASE": SERVER_DATABASE,
        "PGDATABASE" if SERVER_DATABASE == "postgres" else "MYSQL_DATABASE": database,
        "REDIS_URL": f"redis://127.0.0.1:{redis.port}/0",
        "DJANGO_MCP_TEST_SIGNALS": "1",
        "DJANGO_MCP_TEST_LEASE": str(lease),
        "DJANGO_MCP_TEST_GRACE": str(grace),
    }


def sqlite_project(database: Path, username: str, password: str, redis_url: str = "") -> dict[str, str]:
    """The test project (``tests.settings``) on a SQLite file of its own, migrated, with a superuser; its
    environment, for server processes that share the file. ``redis_url``: a shared cache and channel layer."""
    env = {
        "DJANGO_SETTINGS_MODULE": "tests.settings",
        "DJANGO_MCP_DATABASE": "sqlite",
        "DJANGO_MCP_SQLITE": str(database),
        "DJANGO_MCP_TEST_SQLITE": str(database),
        "REDIS_URL": redis_url,
    }
    migrate(env)
    subprocess.run(
        [sys.executable, "-m", "django", "createsuperuser", "--noinput", "--username", username, "--email", "a@x.org"],
        cwd=ROOT,
        env={**os.environ, **env, "DJANGO_SUPERUSER_PASSWORD": password},
        check=True,
        timeout=60,
    )
    return env
