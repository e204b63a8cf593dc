"""What open task monitors cost the endpoint: ``tasks/get`` (or task creation) with no monitor open, with
``--viewers`` live monitors open (each a staff session's event stream), and with none again, on one server
per round, in ``--rounds`` rounds; each ratio is the median of the rounds' "open / mean of the two without".

    python3 bench/monitor_viewers.py [--target "django_mcp uvicorn sqlite"] [--scenario tasks/get]
        [--viewers 10] [-c 1,16] [--rounds 5] [--seconds 4] [--json out.json]

Servers, pinning, seeding and the load generator are ``bench/run.py``'s (``bench/profile.py``'s scenario
requests); the target runs with ``BENCH_MONITOR=1`` in every phase (the admin, sessions and their
middleware), so the phases differ only in the monitors open. The viewers are a process of their own on the
load generator's core: each signs in through the admin's login form and reads its monitor's stream.
"""

from __future__ import annotations

import argparse
import dataclasses
import http.cookiejar
import json
import os
import re
import statistics
import subprocess
import sys
import threading
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import profile as scenarios

import run as bench

EVENTS = "/admin/django_mcp/taskmonitor/events/"
PHASES = ("none", "open", "none again")


def watch(base: str, opened: threading.Semaphore) -> None:
    """One staff member's live monitor: signed in through the admin's login form, its stream read until
    the process ends (the standard library only: any interpreter runs it)."""
    cookies = http.cookiejar.CookieJar()
    browser = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(cookies))
    login = browser.open(f"{base}/admin/login/", timeout=30).read().decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', login)
    assert token, login[:300]
    form = {"csrfmiddlewaretoken": token.group(1), "username": "bench", "password": "bench"}
    signed_in = urllib.request.Request(
        f"{base}/admin/login/?next=/admin/",
        data=urllib.parse.urlencode(form).encode(),
        headers={"Referer": f"{base}/admin/login/"},
    )
    browser.open(signed_in, timeout=30).read()
    stream = browser.open(f"{base}{EVENTS}", timeout=None)
    assert stream.status == 200 and stream.headers["Content-Type"] == "text/event-stream", stream.headers
    opened.release()
    while stream.readline():
        pass


def hold(base: str, viewers: int) -> None:
    """``viewers`` live monitors on ``base``; says "open" once all are, then holds them until its standard
    input closes."""
    opened = threading.Semaphore(0)
    for _ in range(viewers):
        threading.Thread(target=watch, args=(base, opened), daemon=True).start()
    for _ in range(viewers):
        if not opened.acquire(timeout=30):
            raise SystemExit("the monitors did not open within 30 s")
    print("open", flush=True)
    sys.stdin.read()


def open_viewers(runner: bench.Bench, server: bench.Server, viewers: int) -> subprocess.Popen[str]:
    """The viewers' process, on the load generator's core, once its monitors are open."""
    args = [sys.executable, __file__, "--hold", f"http://{bench.HOST}:{server.port}", "--viewers", str(viewers)]
    if runner.pin:
        args = ["taskset", "-c", "1", *args]
    proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    said = proc.stdout.readline().strip()
    if said != "open":
        proc.kill()
        raise SystemExit(f"the viewers did not open their monitors (said {said!r}, exit {proc.wait()})")
    return proc


def close_viewers(proc: subprocess.Popen[str]) -> None:
    assert proc.stdin is not None
    proc.stdin.close()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def one_round(
    runner: bench.Bench,
    target: bench.Target,
    args: argparse.Namespace,
    concurrencies: list[int],
    round_no: int,
    rps: dict[tuple[str, int], list[float]],
) -> None:
    """The three phases on a fresh server, their req/s added to ``rps``."""
    server = runner.start(target)
    try:
        requests, expect = scenarios.scenario_requests(runner, target, server, args.scenario)
        for phase in PHASES:
            viewers = open_viewers(runner, server, args.viewers) if phase == "open" else None
            try:
                for concurrency in concurrencies:
                    result = runner.closed_loop(server, requests, expect, concurrency, measure_s=args.seconds)
                    if result.get("errors"):
                        raise SystemExit(f"{phase} c={concurrency}: {result['errors']} errors")
                    rps.setdefault((phase, concurrency), []).append(result["rps"])
                    print(f"round {round_no} {phase:<11} c={concurrency:<3} {result['rps']:9.1f} req/s", flush=True)
            finally:
                if viewers is not None:
                    close_viewers(viewers)
    finally:
        server.stop()


def measure(args: argparse.Namespace) -> dict[str, Any]:
    concurrencies = [int(c) for c in args.concurrency.split(",")]
    chosen = scenarios.pick_target(args.target, args.scenario)
    if chosen.kind != "dj":
        raise SystemExit("--target must be a django_mcp target")
    target = dataclasses.replace(chosen, env=(*chosen.env, ("BENCH_MONITOR", "1")))
    runner = scenarios.scratch_runner("monitor-viewers", target)
    runner.seed(target, ["staff"])
    rps: dict[tuple[str, int], list[float]] = {}
    ratios: dict[int, list[float]] = {c: [] for c in concurrencies}
    try:
        for round_no in range(1, args.rounds + 1):
            one_round(runner, target, args, concurrencies, round_no, rps)
            for concurrency in concurrencies:
                without = statistics.mean([rps[(p, concurrency)][-1] for p in ("none", "none again")])
                ratios[concurrency].append(rps[("open", concurrency)][-1] / without)
    finally:
        scenarios.stop_helpers(runner)
    summary: dict[str, Any] = {
        "target": target.name,
        "scenario": args.scenario,
        "viewers": args.viewers,
        "rounds": args.rounds,
        "seconds": args.seconds,
        "pinned": runner.pin,
        "rps": {f"{phase} c={c}": values for (phase, c), values in rps.items()},
        "ratio": {f"c={c}": statistics.median(values) for c, values in ratios.items()},
        "ratios": {f"c={c}": values for c, values in ratios.items()},
    }
    print(f"\n{target.name}, {args.scenario}, {args.viewers} monitors open: medians of {args.rounds} rounds")
    for concurrency in concurrencies:
        medians = {phase: statistics.median(rps[(phase, concurrency)]) for phase in PHASES}
        print(
            f"  c={concurrency:<3} none {medians['none']:8.1f}  open {medians['open']:8.1f}  "
            f"none again {medians['none again']:8.1f} req/s   open / without {summary['ratio'][f'c={concurrency}']:.3f}"
        )
    return summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--target", default="django_mcp uvicorn sqlite")
    parser.add_argument("--scenario", default="tasks/get", choices=("tasks/get", "create", "tools/call"))
    parser.add_argument("--viewers", type=int, default=10)
    parser.add_argument("-c", "--concurrency", default="1,16", help="comma-separated (default 1,16)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=4.0, help="measured per point, after the warm-up")
    parser.add_argument("--json")
    parser.add_argument("--hold", help=argparse.SUPPRESS)  # the viewers' own process: the server's base URL
    args = parser.parse_args()
    if args.hold:
        hold(args.hold, args.viewers)
        return
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    summary = measure(args)
    if args.json:
        Path(args.json).write_text(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
