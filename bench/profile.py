"""Profile a django_mcp target with py-spy while the load generator drives one scenario, and print
where the worker's samples go, by django_mcp line (file:line) and by leaf frame.

    python3 bench/profile.py --target "django_mcp uvicorn sqlite" --scenario tasks/get -c 16
    python3 bench/profile.py --target "django_mcp uvicorn pg" --scenario create -c 16 --seconds 10

Scenarios: ``tools/call``, ``tasks/get``, ``create``. Uses the harness venv (py-spy is installed
there by ``bench/run.py``; build it with one full run first). The raw collapsed stacks are kept in
``bench/.work/profile-*.txt`` (feed them to any flamegraph tool). py-spy samples every thread of
the process, but by default (``--gil``) only the thread holding the GIL: the shares are of the
worker's Python CPU time, sampled at ``--rate`` Hz (``--all-threads`` also counts threads waiting
in C, e.g. in the database driver).
"""

from __future__ import annotations

import argparse
import collections
import re
import subprocess
import sys
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import run as bench  # noqa: E402  (bench/run.py, next to this file)

FRAME = re.compile(r"^(?P<func>.*) \((?P<file>[^()]*?):(?P<line>\d+)\)$")
PACKAGE = "django_mcp/"


def analyse(raw: Path, top: int) -> str:
    total = 0
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
    out = [
        f"{total} samples; {100 * outside / total:.1f}% with no django_mcp frame (server, Django, asgiref, idle pools)",
        "",
    ]
    out.append("inclusive, by django_mcp function:")
    out += [f"  {100 * n / total:5.1f}%  {name}" for name, n in by_function.most_common(top)]
    out.append("")
    out.append("by the deepest django_mcp line on the stack (that line and what it calls):")
    out += [f"  {100 * n / total:5.1f}%  {name}" for name, n in by_line.most_common(top)]
    out.append("")
    out.append("leaf frames (where the samples were taken):")
    out += [f"  {100 * n / total:5.1f}%  {name}" for name, n in leaf.most_common(top)]
    return "\n".join(out)


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
    args = parser.parse_args()

    target = next((t for t in bench.all_targets() if t.name == args.target and t.kind == "dj"), None)
    if target is None:
        raise SystemExit(
            f"--target must name a django_mcp target: {[t.name for t in bench.all_targets() if t.kind == 'dj']}"
        )
    py_spy = bench.VENVS / "harness" / "bin" / "py-spy"
    if not py_spy.exists():
        raise SystemExit("no bench/.venvs/harness/bin/py-spy: run `python3 bench/run.py` once to build the venvs")
    options = argparse.Namespace(smoke=False, rounds=1, out=str(bench.WORK / "profile-out"), targets=None)
    runner = bench.Bench(options)
    bench.WORK.mkdir(parents=True, exist_ok=True)
    runner.src, runner.source = bench.snapshot_source()
    runner.pythons = {"harness": str(bench.venv_python("harness"))}
    runner.loadgen = bench.LoadGen(runner.pythons["harness"], runner.pin)
    runner.seed(target, ["migrate"], timeout=120)
    server = runner.start(target)
    try:
        runner.make_template(server)
        ids = runner.seed(target, ["reset", "--tasks", "1000", "--sample", "1000"])["ids"]
        requests = {
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
        }[args.scenario]
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
        print(analyse(raw, args.top))
        print(f"\nraw stacks: {raw}")
    finally:
        server.stop()
        runner.loadgen.stop()


if __name__ == "__main__":
    main()
