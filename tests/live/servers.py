"""Start real server processes on 127.0.0.1 for live tests, and stop exactly those."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]


def migrate(env: dict[str, str]) -> None:
    """``manage.py migrate`` for the settings and database ``env`` names (added to this process's)."""
    subprocess.run(  # noqa: S603 - our own interpreter and arguments
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
    """Run ``python <args...>`` with a PORT placeholder filled in; yield its base URL once it answers."""
    proc, base = _start(args, env, ready_path)
    try:
        yield base
    finally:
        _stop(proc)


def _start(args: list[str], env: dict[str, str] | None, ready_path: str) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    cmd = [sys.executable, *[a.replace("{port}", str(port)) for a in args]]
    # A file, not a pipe: a busy server would block on a full pipe nobody reads.
    log = tempfile.TemporaryFile()  # noqa: SIM115 - the process owns it until _stop
    proc = subprocess.Popen(  # noqa: S603 - our own interpreter and arguments
        cmd, cwd=ROOT, env={**os.environ, **(env or {})}, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )
    proc.log = log  # type: ignore[attr-defined]
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        if proc.poll() is not None:
            log.seek(0)
            raise RuntimeError(f"server exited with {proc.returncode}:\n{log.read().decode(errors='replace')}")
        try:
            httpx.get(base + ready_path, timeout=1)
            return proc, base
        except httpx.TransportError:
            if time.monotonic() > deadline:
                _stop(proc)
                raise RuntimeError("server did not start within 30 s") from None
            time.sleep(0.1)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)
    log = getattr(proc, "log", None)
    if log is not None:
        log.close()


class ServerHandle:
    """A started server process: its base URL and how to stop it."""

    def __init__(self, proc: subprocess.Popen[bytes], base: str) -> None:
        self.proc, self.base = proc, base

    def stop(self) -> None:
        _stop(self.proc)


def server_process_handle(
    args: list[str], env: dict[str, str] | None = None, ready_path: str = "/mcp/"
) -> ServerHandle:
    """Like :func:`server_process`, for tests that stop, kill or restart the process themselves."""
    proc, base = _start(args, env, ready_path)
    return ServerHandle(proc, base)


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
        self.handle = server_process_handle(args, env=self.env)
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
        """Everything the process logged so far (pread: its file offset is left alone)."""
        fd = self.running.proc.log.fileno()  # type: ignore[attr-defined]
        return os.pread(fd, os.fstat(fd).st_size, 0).decode(errors="replace")


class Redis:
    """A private redis-server on a free loopback port (no persistence), started and stopped by PID."""

    def __init__(self) -> None:
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.proc = subprocess.Popen(  # noqa: S603
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
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
