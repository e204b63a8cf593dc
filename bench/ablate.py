"""What each part of the deployed shape costs inside it: the deployed target with one part off at a time
(``BENCH_DEPLOYED_OFF``, bench/djbench/settings.py), beside the plain PostgreSQL target, in interleaved
rounds (a fresh server each), and each variant's req/s as a ratio of the plain target's.

    python3 bench/ablate.py --scenario tools/call -c 1,16 --rounds 3
    python3 bench/ablate.py --scenario tasks/get --off limits --off tracing,export

Servers, pinning and load generator are ``bench/run.py``'s; the requests are ``bench/profile.py``'s.
``bench/run.py`` stays the judge: this only says where the deployed target's time goes.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import profile as scenarios

PARTS = ("auth", "limits", "audit", "export", "tracing")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scenario", default="tools/call", choices=("tools/call", "tasks/get", "create"))
    parser.add_argument("-c", "--concurrency", default="1,16", help="comma-separated (default 1,16)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=4.0, help="measured per point, after the warm-up")
    parser.add_argument(
        "--off",
        action="append",
        help=f"parts turned off together, comma-separated (repeatable; default: each of {PARTS})",
    )
    args = parser.parse_args()
    concurrencies = [int(c) for c in args.concurrency.split(",")]
    deployed = scenarios.pick_target("django_mcp uvicorn pg deployed", args.scenario)
    plain = scenarios.pick_target("django_mcp uvicorn pg", args.scenario)
    variants = {"plain": plain, "deployed": deployed}
    for off in args.off or PARTS:
        env = (*deployed.env, ("BENCH_DEPLOYED_OFF", off))
        variants[f"deployed -{off}"] = dataclasses.replace(deployed, name=f"{deployed.name} -{off}", env=env)
    runner = scenarios.scratch_runner("ablate", deployed)
    sides = {name: (target, runner.src) for name, target in variants.items()}
    rps = scenarios.interleaved_rounds(runner, sides, args.scenario, concurrencies, args.rounds, args.seconds)
    print(f"\n{args.scenario}: medians of {args.rounds} rounds, each as a ratio of the plain PostgreSQL target")
    for concurrency in concurrencies:
        base = statistics.median(rps[("plain", concurrency)])
        for name in variants:
            median = statistics.median(rps[(name, concurrency)])
            print(f"  c={concurrency:<3} {name:<24} {median:9.1f} req/s  {median / base:.3f}x plain")


if __name__ == "__main__":
    main()
