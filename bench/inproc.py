"""Per-request CPU of the bench server in-process: the Django ASGI application called directly.

No HTTP server, no load generator, no second core: a loop on one event loop sends N requests one
after another (``-c 1``) or N at a time (``-c 16``) to ``bench.djbench.asgi.application`` and
reports microseconds per request for ``tools/call`` (the sync echo), ``tasks/get``, task creation
(``instant``, which also finishes at once) and the Django floor (the bare async view), and each as a
multiple of the floor; then what one thread hop costs on this machine (a no-op sent to a thread pool
and awaited), the unit the request paths are made of. It measures the library's and
Django's own work (ninja, the ladder, dispatch, the store's thread hop, the database) without the
network's noise, so a change's effect shows in seconds; ``bench/run.py`` stays the judge.

    bench/.venvs/harness/bin/python bench/inproc.py              # SQLite, best of 5 rounds of 1000 requests
    BENCH_DB=postgres bench/.venvs/harness/bin/python bench/inproc.py -n 1000

It uses (and migrates) the bench's own database: ``BENCH_SQLITE`` (default bench/.work/inproc.sqlite3)
or the ``bench`` schema on PostgreSQL.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.djbench.settings")
os.environ.setdefault("BENCH_SQLITE", str(ROOT / "bench" / ".work" / "inproc.sqlite3"))

from bench.loadgen import build_request  # noqa: E402


def _scope_and_body(spec: dict[str, Any], path: str = "/mcp/") -> tuple[dict[str, Any], bytes]:
    raw = build_request("127.0.0.1", path, spec)
    head, body = raw.split(b"\r\n\r\n", 1)
    headers = [
        (name.strip().lower().encode(), value.strip().encode())
        for name, value in (line.split(":", 1) for line in head.decode().split("\r\n")[1:])
    ]
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": headers,
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8000),
    }
    return scope, body


async def _one(app: Any, scope: dict[str, Any], body: bytes) -> bytes:
    sent = False
    chunks: list[bytes] = []

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        await asyncio.sleep(3600)
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))

    await app(scope, receive, send)
    return b"".join(chunks)


async def _measure(app: Any, spec: dict[str, Any], n: int, concurrency: int, path: str = "/mcp/") -> float:
    scope, body = _scope_and_body(spec, path)
    answer = await _one(app, scope, body)  # warm up, and check it answers
    if b'"error"' in answer:
        raise SystemExit(f"{spec['method']} answered an error: {answer[:300]!r}")
    for _ in range(50):
        await _one(app, scope, body)
    start_cpu, start = time.process_time(), time.perf_counter()
    for _ in range(n // concurrency):
        await asyncio.gather(*(_one(app, scope, body) for _ in range(concurrency)))
    done = (n // concurrency) * concurrency
    cpu, wall = time.process_time() - start_cpu, time.perf_counter() - start
    return cpu / done * 1e6, wall / done * 1e6


def _nothing() -> None:
    return None


async def _thread_hop(n: int) -> tuple[float, float]:
    """A no-op through a thread pool and back (what each store call, sync tool or Django hop pays first)."""
    from concurrent.futures import ThreadPoolExecutor

    loop = asyncio.get_running_loop()
    with ThreadPoolExecutor(max_workers=4) as pool:
        for _ in range(50):
            await loop.run_in_executor(pool, _nothing)
        start_cpu, start = time.process_time(), time.perf_counter()
        for _ in range(n):
            await loop.run_in_executor(pool, _nothing)
        return (time.process_time() - start_cpu) / n * 1e6, (time.perf_counter() - start) / n * 1e6


async def _main(n: int, concurrency: int, repeat: int) -> None:
    from bench.djbench.asgi import application

    created = await _one(
        application, *_scope_and_body({"method": "tools/call", "params": {"name": "instant"}, "tasks": True})
    )
    task_id = json.loads(created)["result"]["taskId"]
    await asyncio.sleep(0.2)
    scenarios = {
        "floor": ({"method": "tasks/get", "params": {"taskId": task_id}, "tasks": True}, "/floor/"),
        "tools/call": ({"method": "tools/call", "params": {"name": "echo", "arguments": {"text": "hi"}}}, "/mcp/"),
        "tasks/get": ({"method": "tasks/get", "params": {"taskId": task_id}, "tasks": True}, "/mcp/"),
        "create": ({"method": "tools/call", "params": {"name": "instant"}, "tasks": True}, "/mcp/"),
    }
    # Interleaved rounds, the best of each: what the code costs, not what the machine was doing.
    rounds: dict[str, list[tuple[float, float]]] = {name: [] for name in scenarios}
    for _ in range(repeat):
        for name, (spec, path) in scenarios.items():
            rounds[name].append(await _measure(application, spec, n, concurrency, path))
    figures = {name: min(values) for name, values in rounds.items()}
    hop_cpu, hop_wall = min([await _thread_hop(n) for _ in range(repeat)])
    floor_cpu, floor_wall = figures["floor"]
    print(f"{os.environ.get('BENCH_DB', 'sqlite')}, c={concurrency}, best of {repeat} rounds of {n} requests")
    for name, (cpu, wall) in figures.items():
        print(
            f"  {name:<11} cpu {cpu:7.0f} µs/req ({cpu / floor_cpu:4.2f}× floor)"
            f"   wall {wall:7.0f} µs/req ({wall / floor_wall:4.2f}× floor)"
        )
    print(
        f"  {'thread hop':<11} cpu {hop_cpu:7.0f} µs     ({hop_cpu / floor_cpu:4.2f}× floor)"
        f"   wall {hop_wall:7.0f} µs     ({hop_wall / floor_wall:4.2f}× floor)"
        "   (a no-op to a thread pool and back, c=1)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-n", type=int, default=1000, help="requests per scenario and round (default 1000)")
    parser.add_argument("-r", "--rounds", type=int, default=5, help="interleaved rounds (default 5)")
    parser.add_argument("-c", "--concurrency", type=int, default=1, help="requests in flight (default 1)")
    args = parser.parse_args()
    (ROOT / "bench" / ".work").mkdir(exist_ok=True)
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)
    asyncio.run(_main(args.n, args.concurrency, args.rounds))


if __name__ == "__main__":
    main()
