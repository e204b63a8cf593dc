"""Profile a django_mcp target (or the floor) with py-spy while the load generator drives one
scenario, and print where the worker's samples go: by package, by django_mcp function and line
(file:line), and by leaf frame, each as a share of the samples and as microseconds per request.

    python3 bench/profile.py --target "django_mcp uvicorn sqlite" --scenario tasks/get -c 16
    python3 bench/profile.py --target "django_mcp uvicorn pg" --scenario create -c 16 --seconds 10
    python3 bench/profile.py --target "floor uvicorn" --scenario tasks/get -c 16   # the floor, to compare
    python3 bench/profile.py --raw bench/.work/profile/profile-....txt --rps 333 --rate 200 --seconds 10

Scenarios: ``tools/call``, ``tasks/get``, ``create`` (the floor: ``tasks/get`` only). At c=16 the
server's one core is saturated, so a share of the samples times (1 s / req/s) is what that part
costs per request (shown as µs/req; py-spy's own sampling slows the server a little: the req/s is
the one measured under it). Uses the harness venv (py-spy is installed
there by ``bench/run.py``; build it with one full run first). The raw collapsed stacks are kept in
``bench/.work/profile/profile-*.txt`` (feed them to any flamegraph tool). py-spy samples every thread of
the process, but by default (``--gil``) only the thread holding the GIL: the shares are of the
worker's Python CPU time, sampled at ``--rate`` Hz (``--all-threads`` also counts threads waiting
in C, e.g. in the database driver). py-spy reads the server without pausing it (``--nonblocking``)
unless ``--blocking`` is given: pausing gives exact stacks but slows the server.
"""

from __future__ import annotations

import argparse
import collections
import re
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import run as bench

FRAME = re.compile(r"^(?P<func>.*) \((?P<file>[^()]*?):(?P<line>\d+)\)$")
PACKAGE = "django_mcp/"


def _package(path: str) -> str:
    """The top-level package of a frame's file (``django``, ``asgiref``, ``django_mcp``, ``<stdlib> asyncio``...).

    py-spy names files relative to their ``sys.path`` entry (``django/db/models/query.py``), or absolute.
    """
    if PACKAGE in path:
        return "django_mcp"
    if path.startswith("<frozen"):
        return "<stdlib>"
    for marker in ("site-packages/", "/lib/python3."):
        if marker in path:
            path = path.split(marker, 1)[1]
            if marker.startswith("/lib"):
                path = path.split("/", 1)[1] if "/" in path else path
    if "/bench/" in path or path.startswith("bench/"):
        return "bench"
    top = path.lstrip("/").split("/", 1)[0].removesuffix(".py")
    return f"<stdlib> {top}" if top in sys.stdlib_module_names else top


def analyse(raw: Path, top: int, rps: float | None = None, rate: int = 100, seconds: float = 0.0) -> str:
    """Shares of the samples; with ``rps``, ``rate`` and ``seconds`` also µs per request.

    A sample stands for 1/``rate`` s of the sampled thread(s); the requests served while sampling are
    ``rps`` × ``seconds``: a part's µs per request is its samples / rate / requests.
    """
    total = 0
    by_package: collections.Counter[str] = collections.Counter()
    by_line: collections.Counter[str] = collections.Counter()
    by_function: collections.Counter[str] = collections.Counter()
    leaf: collections.Counter[str] = collections.Counter()
    outside = 0
    for row in raw.read_text().splitlines():
        stack, _, count = row.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        n = int(count)
        total += n
        frames = [FRAME.match(f) for f in stack.split(";")]
        for name in {_package(f["file"]) for f in frames if f}:
            by_package[name] += n
        ours = [f for f in frames if f and PACKAGE in f["file"]]
        if not ours:
            outside += n
        else:
            # The deepest django_mcp line of the stack: that line and everything it called.
            deepest = ours[-1]
            by_line[f"{deepest['file'][deepest['file'].index(PACKAGE) :]}:{deepest['line']} ({deepest['func']})"] += n
            for name in {f"{f['file'][f['file'].index(PACKAGE) :]} {f['func']}" for f in ours}:
                by_function[name] += n
        last = frames[-1]
        if last:
            leaf[f"{last['func']} ({last['file'].split('site-packages/')[-1]}:{last['line']})"] += n
    if not total:
        return "no samples"

    requests = (rps or 0) * seconds

    def us(n: int) -> float:
        return n / rate / requests * 1e6

    def row(n: int, name: str) -> str:
        cost = f"{us(n):7.0f} µs/req  " if requests else ""
        return f"  {100 * n / total:5.1f}%  {cost}{name}"

    out = [
        f"{total} samples; {100 * outside / total:.1f}% with no django_mcp frame (server, Django, asgiref, idle pools)",
    ]
    if requests:
        out.append(
            f"sampled time per request {us(total):.0f} µs; at {rps} req/s one request is {1e6 / rps:.0f} µs of "
            "wall clock (the difference: the core idle or in C code without the GIL)"
        )
    out.append("")
    out.append("inclusive, by package (a stack counts once for each package on it):")
    out += [row(n, name) for name, n in by_package.most_common(top)]
    out.append("")
    out.append("inclusive, by django_mcp function:")
    out += [row(n, name) for name, n in by_function.most_common(top)]
    out.append("")
    out.append("by the deepest django_mcp line on the stack (that line and what it calls):")
    out += [row(n, name) for name, n in by_line.most_common(top)]
    out.append("")
    out.append("leaf frames (where the samples were taken):")
    out += [row(n, name) for name, n in leaf.most_common(top)]
    return "\n".join(out)


def pick_target(name: str, scenario: str) -> bench.Target:
    """The django_mcp target, floor or django-mcpz named ``name``, if it answers ``scenario``."""
    names = [t.name for t in bench.all_targets() if t.kind in ("dj", "floor", "mcpz")]
    target = next((t for t in bench.all_targets() if t.name == name and t.name in names), None)
    if target is None:
        raise SystemExit(f"--target must name a django_mcp target, the floor or django-mcpz: {names}")
    if target.kind == "floor" and scenario != "tasks/get":
        raise SystemExit("the floor answers tasks/get only")
    if target.kind == "mcpz" and scenario != "tools/call":
        raise SystemExit("django-mcpz answers tools/call only")
    return target


def scratch_runner(name: str, target: bench.Target) -> bench.Bench:
    """A bench runner in a scratch directory of its own (a full run may be using bench/.work/ meanwhile),
    serving django_mcp as it is now, its load generator started and ``target``'s database migrated."""
    bench.WORK = bench.WORK / name
    options = argparse.Namespace(smoke=False, rounds=1, out=str(bench.WORK / "out"), targets=None)
    runner = bench.Bench(options)
    bench.WORK.mkdir(parents=True, exist_ok=True)
    runner.src, runner.source = bench.snapshot_source()
    runner.pythons = {name: str(bench.venv_python(name)) for name in ("harness", "mcpz")}
    runner.loadgen = bench.LoadGen(runner.pythons["harness"], runner.pin)
    if target.kind == "dj":
        runner.seed(target, ["migrate"], timeout=120)
        if target.auth:
            runner.sign_in(target)
    return runner


def scenario_requests(
    runner: bench.Bench, target: bench.Target, server: bench.Server, scenario: str
) -> tuple[list[dict[str, Any]], str]:
    """The requests the load generator sends for ``scenario`` and the text each answer must hold.

    A django_mcp server's table is reset to 1,000 seeded tasks first (``tasks/get`` reads them).
    """
    ids = ["0b9c6b53-5d3e-4a8e-9d56-1f1b8e6a2c41"]
    if target.kind == "dj":
        runner.make_template(server)
        ids = runner.seed(target, ["reset", "--tasks", "1000", "--sample", "1000"])["ids"]
    return {
        "tools/call": (
            [{"method": "tools/call", "params": {"name": "echo", "arguments": {"text": "hello"}}}],
            '"text":"hello"',
        ),
        "create": (
            [{"method": "tools/call", "params": {"name": "instant", "arguments": {}}, "tasks": True}],
            '"resultType":"task"',
        ),
        "tasks/get": (
            [{"method": "tasks/get", "params": {"taskId": i}, "tasks": True} for i in ids],
            '"status":"completed"',
        ),
    }[scenario]


def stop_helpers(runner: bench.Bench) -> None:
    """Stop the load generator, and the OTLP receiver a deployed target started."""
    runner.loadgen.stop()
    if runner.otlp is not None:
        runner.otlp.terminate()
        runner.otlp.wait(10)


def interleaved_rounds(
    runner: bench.Bench,
    sides: dict[str, tuple[bench.Target, Path]],
    scenario: str,
    concurrencies: list[int],
    rounds: int,
    seconds: float,
) -> dict[tuple[str, int], list[float]]:
    """The req/s of each side (a target served from a source tree) per concurrency, in interleaved rounds,
    a fresh server for each side in each round (``bench/ab.py``, ``bench/ablate.py``); the runner's helpers
    are stopped at the end."""
    rps: dict[tuple[str, int], list[float]] = {}
    tokens: dict[str, str] = {}  # a signed-in side's token, minted in its own database
    try:
        for round_no in range(1, rounds + 1):
            for side, (target, src) in sides.items():
                runner.src = src
                if round_no == 1 and target.kind == "dj":  # each side's own database (bench.Bench.env_for)
                    runner.seed(target, ["migrate"], timeout=120)
                    if target.auth:
                        runner.sign_in(target)
                        tokens[side] = runner.tokens[target.name]
                if side in tokens:
                    runner.tokens[target.name] = tokens[side]
                server = runner.start(target)
                try:
                    requests, expect = scenario_requests(runner, target, server, scenario)
                    for concurrency in concurrencies:
                        result = runner.closed_loop(server, requests, expect, concurrency, measure_s=seconds)
                        if result.get("errors"):
                            raise SystemExit(f"{side} c={concurrency}: {result['errors']} errors")
                        rps.setdefault((side, concurrency), []).append(result["rps"])
                        print(f"round {round_no} {side:<24} c={concurrency:<3} {result['rps']:9.1f} req/s", flush=True)
                finally:
                    server.stop()
    finally:
        stop_helpers(runner)
    return rps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--target", default="django_mcp uvicorn sqlite")
    parser.add_argument("--scenario", default="tasks/get", choices=("tools/call", "tasks/get", "create"))
    parser.add_argument("-c", "--concurrency", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--rate", type=int, default=100)
    parser.add_argument("--top", type=int, default=15)
    parser.add_argument(
        "--all-threads", action="store_true", help="sample every non-idle thread, not only the one holding the GIL"
    )
    parser.add_argument(
        "--blocking",
        action="store_true",
        help="pause the server for each sample (exact stacks; the pauses slow it down, which inflates µs/req)",
    )
    parser.add_argument("--raw", help="only analyse these collapsed stacks of an earlier run (with --rps)")
    parser.add_argument("--rps", type=float, help="with --raw: the req/s measured while they were sampled")
    args = parser.parse_args()
    if args.raw:
        print(analyse(Path(args.raw), args.top, args.rps, args.rate, args.seconds))
        return

    target = pick_target(args.target, args.scenario)
    py_spy = bench.VENVS / "harness" / "bin" / "py-spy"
    if not py_spy.exists():
        raise SystemExit("no bench/.venvs/harness/bin/py-spy: run `python3 bench/run.py` once to build the venvs")
    runner = scratch_runner("profile", target)
    server = runner.start(target)
    try:
        requests = scenario_requests(runner, target, server, args.scenario)
        raw = (
            bench.WORK
            / f"profile-{args.target.replace(' ', '_')}-{args.scenario.replace('/', '_')}-c{args.concurrency}.txt"
        )
        spy = subprocess.Popen(
            [
                str(py_spy),
                "record",
                "-p",
                str(server.pid),
                "-d",
                str(int(args.seconds)),
                "-r",
                str(args.rate),
                "-f",
                "raw",
                "-o",
                str(raw),
                *([] if args.all_threads else ["--gil"]),
                *(["--nonblocking"] if not args.blocking else []),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        result: dict = {}
        load = threading.Thread(
            target=lambda: result.update(
                runner.closed_loop(server, requests[0], requests[1], args.concurrency, measure_s=args.seconds + 1)
            )
        )
        load.start()
        load.join()
        spy.wait(timeout=60)
        print(
            f"{args.target} {args.scenario} c={args.concurrency}: {result.get('rps')} req/s, "
            f"p50 {result.get('latency_ms', {}).get('p50')} ms "
            f"(under py-spy at {args.rate} Hz), errors {result.get('errors')}"
        )
        print(
            f"git {runner.source['git_commit'][:12]}"
            + (" + uncommitted django_mcp changes" if runner.source["django_mcp_uncommitted_changes"] else "")
        )
        print(analyse(raw, args.top, result.get("rps"), args.rate, args.seconds))
        print(f"\nraw stacks: {raw}")
    finally:
        server.stop()
        stop_helpers(runner)


if __name__ == "__main__":
    main()
