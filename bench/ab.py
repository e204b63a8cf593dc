"""A/B of a change over HTTP: one target served by django_mcp as committed at ``--base`` and as it is
now, in interleaved rounds (a fresh server each), and the req/s of each, with the medians' ratio.

    python3 bench/ab.py --base HEAD --target "django_mcp uvicorn pg" --scenario tasks/get -c 1,16
    python3 bench/ab.py --base 7eb3450 --target "django_mcp uvicorn sqlite" --scenario create --rounds 5

Servers, pinning and load generator are ``bench/run.py``'s; the requests are ``bench/profile.py``'s.
On these VMs req/s moves by 5-10 % between rounds: a change is worth believing when the two sides'
rounds barely overlap (all rounds are printed). ``bench/instructions.py --src`` counts instructions
instead (steadier, in-process); ``bench/run.py`` stays the judge.
"""

from __future__ import annotations

import argparse
import io
import statistics
import subprocess
import sys
import tarfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import profile as scenarios

import run as bench


def base_source(rev: str, into: Path) -> Path:
    """``django_mcp/`` as committed at ``rev``, extracted below ``into`` (what a server's PYTHONPATH takes)."""
    archive = subprocess.run(
        ["git", "archive", "--format=tar", rev, "django_mcp"], cwd=bench.ROOT, capture_output=True, check=True
    ).stdout
    src = into / "src-base"
    if src.exists():
        subprocess.run(["rm", "-rf", str(src)], check=True)
    src.mkdir(parents=True)
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(src, filter="data")
    return src


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", default="HEAD", help="the git revision to compare the working tree with")
    parser.add_argument("--target", default="django_mcp uvicorn sqlite")
    parser.add_argument("--scenario", default="tasks/get", choices=("tools/call", "tasks/get", "create"))
    parser.add_argument("-c", "--concurrency", default="1,16", help="comma-separated (default 1,16)")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=4.0, help="measured per point, after the warm-up")
    args = parser.parse_args()
    concurrencies = [int(c) for c in args.concurrency.split(",")]
    target = scenarios.pick_target(args.target, args.scenario)
    if target.kind != "dj":
        raise SystemExit("--target must name a django_mcp target: the floor and django-mcpz do not change")
    runner = scenarios.scratch_runner("ab", target)
    sides = {"base": (target, base_source(args.base, bench.WORK)), "now": (target, runner.src)}
    rps = scenarios.interleaved_rounds(runner, sides, args.scenario, concurrencies, args.rounds, args.seconds)
    print(f"\n{args.target} {args.scenario}: now (working tree) against {args.base}, medians of {args.rounds} rounds")
    for concurrency in concurrencies:
        base, now = (statistics.median(rps[(side, concurrency)]) for side in ("base", "now"))
        print(f"  c={concurrency:<3} base {base:9.1f}  now {now:9.1f} req/s  now/base {now / base:.3f}")


if __name__ == "__main__":
    main()
