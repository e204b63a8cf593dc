"""Start real server processes on 127.0.0.1 for live tests, and stop exactly those."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def server_process(args: list[str], env: dict[str, str] | None = None, ready_path: str = "/mcp/") -> Iterator[str]:
    """Run ``python <args...>`` with a PORT placeholder filled in; yield its base URL once it answers."""
    port = free_port()
    cmd = [sys.executable, *[a.replace("{port}", str(port)) for a in args]]
    proc = subprocess.Popen(  # noqa: S603 - our own interpreter and arguments
        cmd,
        cwd=ROOT,
        env={**os.environ, **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            if proc.poll() is not None:
                out = proc.stdout.read().decode() if proc.stdout else ""
                raise RuntimeError(f"server exited with {proc.returncode}:\n{out}")
            try:
                httpx.get(base + ready_path, timeout=1)
                break
            except httpx.TransportError:
                if time.monotonic() > deadline:
                    raise RuntimeError("server did not start within 30 s") from None
                time.sleep(0.1)
        yield base
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=5)
        if proc.stdout:
            proc.stdout.close()
