"""Instructions per request, counted by valgrind's callgrind: a figure that does not move with the machine.

The req/s of ``bench/run.py`` and ``bench/inproc.py`` swing by 10-35 % from run to run on a shared
VM (the peers too), which hides a change worth a few per cent. Callgrind counts the instructions the
process executes, whatever else the machine does. This runs the bench's ASGI application in-process
(as ``bench/inproc.py`` does, under uvloop as the bench servers run) twice per scenario, with
``BASE`` and ``BASE + n`` requests after the same warm-up and with the garbage collector off after it
(a full collection lands at a different request in each run and would swamp the difference), and
prints ``(instructions of the long run - of the short run) / n``: the instructions of one request,
and each scenario as a multiple of the floor. ``--src`` compares source trees (each a directory
holding a ``django_mcp`` package, e.g. a ``git worktree`` of another commit) side by side. A tree with
``django_mcp/asgi.py`` is served by its ``get_asgi_application()`` (the floor too), an older one by
Django's own; ``--django-asgi`` serves every tree by Django's own.

    python3 bench/instructions.py                                   # this checkout, SQLite
    python3 bench/instructions.py --src /tmp/before --src .         # A/B of two trees
    python3 bench/instructions.py --scenarios tasks/get -n 2000     # one scenario, tighter
    python3 bench/instructions.py --env BENCH_AUDIT=1               # with a feature on (bench/djbench/settings)
    python3 bench/instructions.py --scenarios "tools/call signed"   # behind sign-in (a personal token)
    python3 bench/instructions.py --scenarios tools/call --env BENCH_DEPLOYED=1 --env BENCH_DB=postgres \
        --env BENCH_REDIS=redis://127.0.0.1:6379/5 --env BENCH_DEPLOYED_OFF=export   # the deployed shape

Needs valgrind and the harness venv (built by one ``bench/run.py`` run). Each run takes about a
minute per 1,000 requests (valgrind runs the process ~50x slower); runs go two at a time. Threads
(Django's per-request thread, a sync tool's hop) make the count vary by about ±30,000 instructions
per request between identical runs with the default ``-n``: read differences below ~2 % as noise.
Database: the bench's own SQLite file (``bench/.work/instructions.sqlite3``), migrated on first use.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import re
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORK = ROOT / "bench" / ".work"
BASE = 100
SCENARIOS = ("floor", "tasks/get", "tools/call", "tasks/get signed", "tools/call signed")
COLLECTED = re.compile(rb"Collected : (\d+)")


def _drive(scenario: str, n: int) -> None:
    """Inside valgrind: warm up, stop the garbage collector, then send ``n`` requests of ``scenario``."""
    import django

    django.setup()
    from bench import inproc, loadgen, seed
    from bench.djbench.asgi import application

    # "... signed": the same request to the endpoint behind sign-in, with a personal token (a fresh one per run);
    # in the deployed shape (BENCH_DEPLOYED=1, sign-in not turned off) every request, to /mcp/, with an access token.
    endpoint = "/mcp-auth/" if scenario.endswith(" signed") else "/mcp/"
    deployed = os.environ.get("BENCH_DEPLOYED") == "1" and "auth" not in os.environ.get("BENCH_DEPLOYED_OFF", "")
    if endpoint == "/mcp-auth/" or deployed:
        loadgen._job_headers["Authorization"] = f"Bearer {seed.token()['token']}"

    async def main() -> None:
        created = await inproc._one(
            application,
            *inproc._scope_and_body({"method": "tools/call", "params": {"name": "instant"}, "tasks": True}, endpoint),
        )
        task_id = json.loads(created)["result"]["taskId"]
        await asyncio.sleep(0.2)
        spec, path = {
            "floor": ({"method": "tasks/get", "params": {"taskId": task_id}, "tasks": True}, "/floor/"),
            "tasks/get": ({"method": "tasks/get", "params": {"taskId": task_id}, "tasks": True}, endpoint),
            "tools/call": ({"method": "tools/call", "params": {"name": "echo", "arguments": {"text": "hi"}}}, endpoint),
        }[scenario.removesuffix(" signed")]
        scope, body = inproc._scope_and_body(spec, path)
        if b'"error"' in await inproc._one(application, scope, body):
            raise SystemExit(f"{scenario} answered an error")
        for _ in range(50):
            await inproc._one(application, scope, body)
        gc.collect()
        gc.disable()
        for _ in range(n):
            await inproc._one(application, scope, body)

    import uvloop

    uvloop.run(main())


def _env(src: Path, database: Path) -> dict[str, str]:
    """The tree's ``django_mcp`` first on the path, the bench's settings, its own SQLite file, and Django's
    own ASGI application where the tree has no ``django_mcp.asgi`` or ``--django-asgi`` asks for it."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BENCH_", "DJANGO_"))}
    env.update(
        PYTHONPATH=os.pathsep.join([str(src.resolve()), str(ROOT)]),
        DJANGO_SETTINGS_MODULE="bench.djbench.settings",
        BENCH_SQLITE=str(database),
    )
    if DJANGO_ASGI or not (src / "django_mcp" / "asgi.py").exists():
        env["BENCH_ASGI"] = "django"
    env.update(EXTRA_ENV)
    return env


DJANGO_ASGI = False  # --django-asgi
EXTRA_ENV: dict[str, str] = {}  # --env


def _migrate(python: str, src: Path, database: Path) -> None:
    """Once per tree, outside valgrind (its migrations, its file: two counting runs share it, read mostly)."""
    command = [python, "-m", "django", "migrate", "--verbosity", "0"]
    subprocess.run(command, env=_env(src, database), cwd=src, check=True, timeout=600)


def _count(python: str, src: Path, database: Path, scenario: str, n: int) -> int:
    command = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null"]
    command += [python, __file__, "--drive", scenario, str(n)]
    done = subprocess.run(command, env=_env(src, database), cwd=src, capture_output=True, timeout=3600, check=False)
    counts = COLLECTED.findall(done.stderr)
    if done.returncode != 0 or not counts:
        raise SystemExit(f"{scenario} under valgrind failed:\n{done.stderr.decode(errors='replace')[-2000:]}")
    return int(counts[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--src", action="append", type=Path, help="a tree holding django_mcp/ (repeatable)")
    parser.add_argument("--scenarios", default=",".join(SCENARIOS[:3]), help=f"comma-separated: {', '.join(SCENARIOS)}")
    parser.add_argument("-n", type=int, default=1000, help="requests counted per scenario (default 1000)")
    parser.add_argument(
        "--django-asgi",
        action="store_true",
        help="serve every tree with Django's own ASGI application (default: django_mcp.asgi's where a tree has it)",
    )
    parser.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="the bench settings' switches for every run, e.g. BENCH_RATE_LIMIT=100000000/h (repeatable)",
    )
    parser.add_argument("--drive", nargs=2, metavar=("SCENARIO", "N"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    global DJANGO_ASGI
    DJANGO_ASGI = args.django_asgi
    EXTRA_ENV.update(item.split("=", 1) for item in args.env)
    if args.drive:
        _drive(args.drive[0], int(args.drive[1]))
        return
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (Debian: apt-get install valgrind)")
    python = ROOT / "bench" / ".venvs" / "harness" / "bin" / "python"
    if not python.exists():
        raise SystemExit("no harness venv: run bench/run.py once (or --smoke after a full run) to build it")
    scenarios = [s for s in args.scenarios.split(",") if s]
    if unknown := set(scenarios) - set(SCENARIOS):
        raise SystemExit(f"unknown scenarios: {', '.join(sorted(unknown))}")
    if "floor" not in scenarios:
        scenarios.insert(0, "floor")
    trees = args.src or [ROOT]
    WORK.mkdir(parents=True, exist_ok=True)
    databases = {tree: WORK / f"instructions-{i}.sqlite3" for i, tree in enumerate(trees)}
    for tree in trees:
        _migrate(str(python), tree, databases[tree])
    jobs = [(tree, s, count) for tree in trees for s in scenarios for count in (BASE, BASE + args.n)]
    with ThreadPoolExecutor(max_workers=2) as pool:
        counts = pool.map(lambda job: _count(str(python), job[0], databases[job[0]], job[1], job[2]), jobs)
        totals = dict(zip(jobs, counts, strict=True))
    print(f"instructions per request (callgrind, in-process under uvloop, GC off; {args.n} requests each)")
    for tree in trees:
        per = {s: (totals[(tree, s, BASE + args.n)] - totals[(tree, s, BASE)]) / args.n for s in scenarios}
        print(f"  {tree}")
        for s in scenarios:
            print(f"    {s:<18} {per[s] / 1e6:7.3f} M   ({per[s] / per['floor']:4.2f}x floor)")


if __name__ == "__main__":
    main()
