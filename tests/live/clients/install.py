"""Install the official MCP clients the live tests drive, once, into a cache folder.

``python -m tests.live.clients.install`` installs everything and prints what it
did as JSON (paths, versions, seconds). Later runs find it all in the cache and
do no network work.

* Node.js >= 22: shared with the conformance runner (its cache,
  ``$DJANGO_MCP_CONFORMANCE_CACHE``), i.e. the ``node`` on PATH if new enough,
  else the npm registry package ``node-linux-<arch>``.
* ``@modelcontextprotocol/sdk`` (the TypeScript SDK, 1.x line) with
  ``npm install --ignore-scripts`` into ``<cache>/ts-sdk-<version>``.
* ``@modelcontextprotocol/client`` (the TypeScript SDK, 2.x line: the client
  package, with ``@modelcontextprotocol/core`` as its dependency) the same way
  into ``<cache>/ts-client-<version>``.
* the Python SDK ``mcp`` into the venv ``<cache>/mcp-<version>``.
* ``fastmcp`` + ``fastmcp-tasks`` (and the same ``mcp``) into the venv
  ``<cache>/fastmcp-<version>``.

``<cache>`` is ``$DJANGO_MCP_CLIENTS_CACHE``, default ``~/.cache/django-mcp-clients``.
A marker file is written after a complete install; an ``flock`` on
``<cache>/.lock`` serialises parallel first installs. Each pip install is
capped at :data:`PIP_TIMEOUT_S` and prints a line every
:data:`HEARTBEAT_S` seconds while it runs. Standard library only.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TextIO

from tests.conformance import runner

CACHE_ENV = "DJANGO_MCP_CLIENTS_CACHE"
TS_SDK_PACKAGE = "@modelcontextprotocol/sdk"
TS_SDK_VERSION = "1.32.2"  # the newest 1.x on the npm registry (the 1.x line speaks 2025-11-25 and older only)
TS_CLIENT_PACKAGE = "@modelcontextprotocol/client"
# The 2.x line (Node >= 20): speaks 2026-07-28 and the handshake era; its default
# versionNegotiation mode is "legacy" (a plain initialize, 2025-11-25), "auto" probes server/discover.
TS_CLIENT_VERSION = "2.4.0"
MCP_VERSION = "2.3.0"  # the Python SDK: speaks 2026-07-28 and the handshake era (mode="legacy" / "auto")
FASTMCP_VERSION = "4.1.4"  # fastmcp-tasks 4.1.4 pins fastmcp-slim 4.1.4, so fastmcp 4.2.x cannot join it
FASTMCP_TASKS_VERSION = "4.1.4"

PIP_TIMEOUT_S = 10 * 60
HEARTBEAT_S = 15
INSTALLED_MARKER = ".django-mcp-installed"


class InstallError(RuntimeError):
    """A client could not be installed (no network, registry error, timeout)."""


@dataclass
class Installed:
    """One installed component: where it is, and how long this call spent installing it (0: cached)."""

    name: str
    version: str
    path: str
    seconds: float


def cache_dir() -> Path:
    configured = os.environ.get(CACHE_ENV)
    return Path(configured).expanduser() if configured else Path.home() / ".cache" / "django-mcp-clients"


def _timed(name: str, version: str, install: Callable[[], object]) -> Installed:
    started = time.monotonic()
    path = install()
    return Installed(name, version, str(path), round(time.monotonic() - started, 1))


def ensure_node(log: TextIO) -> str:
    """A Node.js >= 22 binary (shared with the conformance runner's cache)."""
    try:
        return runner.ensure_node(runner.cache_dir(), log)
    except runner.ConformanceError as exc:
        raise InstallError(str(exc)) from exc


def ensure_ts_sdk(log: TextIO) -> Path:
    """The installed package folder ``.../node_modules/@modelcontextprotocol/sdk``."""
    return _npm_package(TS_SDK_PACKAGE, TS_SDK_VERSION, f"ts-sdk-{TS_SDK_VERSION}", log)


def ensure_ts_client(log: TextIO) -> Path:
    """The installed package folder ``.../node_modules/@modelcontextprotocol/client`` (the 2.x client)."""
    return _npm_package(TS_CLIENT_PACKAGE, TS_CLIENT_VERSION, f"ts-client-{TS_CLIENT_VERSION}", log)


def _npm_package(name: str, version: str, folder: str, log: TextIO) -> Path:
    prefix = cache_dir() / folder
    package = prefix / "node_modules" / name
    try:
        runner.npm_install(prefix, f"{name}@{version}", package / "package.json", log)
    except runner.ConformanceError as exc:
        raise InstallError(str(exc)) from exc
    return package


def _venv_installed(prefix: Path, spec: str, python: Path) -> bool:
    try:
        return python.is_file() and (prefix / INSTALLED_MARKER).read_text(encoding="utf-8").strip() == spec
    except OSError:
        return False


def _run_with_heartbeat(cmd: list[str], log: TextIO, what: str, timeout: float) -> subprocess.CompletedProcess[str]:
    started = time.monotonic()
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    while True:
        try:
            out, err = proc.communicate(timeout=HEARTBEAT_S)
            return subprocess.CompletedProcess(cmd, proc.returncode, out, err)
        except subprocess.TimeoutExpired:
            elapsed = time.monotonic() - started
            if elapsed > timeout:
                proc.kill()
                proc.communicate()
                raise InstallError(f"{what} did not finish within {timeout:.0f} s") from None
            log.write(f"  ... still installing {what} ({elapsed:.0f} s)\n")
            log.flush()


def ensure_venv(name: str, requirements: list[str], log: TextIO) -> Path:
    """The python of ``<cache>/<name>``, a venv with exactly ``requirements`` pip-installed."""
    cache = cache_dir()
    prefix = cache / name
    python = prefix / "bin" / "python"
    spec = " ".join(requirements)
    if _venv_installed(prefix, spec, python):
        return python
    with runner.install_lock(cache):
        if _venv_installed(prefix, spec, python):  # another process installed it while we waited
            return python
        log.write(f"installing {spec} into {prefix} ...\n")
        log.flush()
        started = time.monotonic()
        (prefix / INSTALLED_MARKER).unlink(missing_ok=True)
        venv = _run_with_heartbeat([sys.executable, "-m", "venv", "--clear", str(prefix)], log, "the venv", 120)
        if venv.returncode != 0:
            raise InstallError(f"python -m venv {prefix} failed:\n{venv.stderr[-2000:]}")
        pip = [str(python), "-m", "pip", "install", "--disable-pip-version-check", "--no-input", "-q", *requirements]
        proc = _run_with_heartbeat(pip, log, spec, PIP_TIMEOUT_S)
        noise = [line for line in proc.stderr.splitlines() if not line.startswith("WARNING: Location")]
        if proc.returncode != 0:
            raise InstallError(f"pip install {spec} failed (exit {proc.returncode}):\n" + "\n".join(noise[-20:]))
        (prefix / INSTALLED_MARKER).write_text(spec + "\n", encoding="utf-8")
        log.write(f"  installed {spec} in {time.monotonic() - started:.0f} s\n")
        log.flush()
    return python


def ensure_python_sdk(log: TextIO) -> Path:
    return ensure_venv(f"mcp-{MCP_VERSION}", [f"mcp=={MCP_VERSION}"], log)


def ensure_fastmcp(log: TextIO) -> Path:
    requirements = [f"fastmcp=={FASTMCP_VERSION}", f"fastmcp-tasks=={FASTMCP_TASKS_VERSION}", f"mcp=={MCP_VERSION}"]
    return ensure_venv(f"fastmcp-{FASTMCP_VERSION}", requirements, log)


def install_all(log: TextIO | None = None) -> dict[str, Installed]:
    """Install (or find) every client; raises :class:`InstallError`."""
    log = log or sys.stderr
    return {
        "node": _timed("node", f">={runner.MIN_NODE_MAJOR}", lambda: ensure_node(log)),
        "ts-sdk": _timed(TS_SDK_PACKAGE, TS_SDK_VERSION, lambda: ensure_ts_sdk(log)),
        "ts-client": _timed(TS_CLIENT_PACKAGE, TS_CLIENT_VERSION, lambda: ensure_ts_client(log)),
        "python-sdk": _timed("mcp", MCP_VERSION, lambda: ensure_python_sdk(log)),
        "fastmcp": _timed(
            "fastmcp + fastmcp-tasks", f"{FASTMCP_VERSION} + {FASTMCP_TASKS_VERSION}", lambda: ensure_fastmcp(log)
        ),
    }


def main() -> int:
    try:
        installed = install_all()
    except InstallError as exc:
        sys.stderr.write(f"client install failed: {exc}\n")
        return 2
    sys.stdout.write(json.dumps({key: asdict(value) for key, value in installed.items()}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
