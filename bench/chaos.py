"""Chaos: the production shape under random faults, with a ledger proving nothing acknowledged is lost.

    python bench/chaos.py --minutes 15 --seed 7 --out bench/results/chaos.md

Starts its own PostgreSQL primary with a synchronous standby, Redis, web workers (daphne and uvicorn) and
the worker fleet (bench/chaos_cluster.py); clients, each its own principal, create tasks whose outcome they
know from their arguments (in the web process, asking mid-flight, on the fleet), poll them to the end and
call plain tools. Faults are drawn from a seeded generator: SIGKILL of a web or fleet worker (brought back
as a supervisor would), Redis restarted, PostgreSQL stopped 5-40 s, and failover (the primary killed, the
standby promoted, the old node rebuilt as the new standby). After the last fault and a recovery period,
every task in the ledger is judged (bench/chaos_ledger.py): completed right, failed because its owner was
killed, lost, rewritten, stuck; and every 5xx outside a fault window, or inside one without being a 503
with Retry-After, is counted. The same seed replays the same draws.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.chaos_cluster import LEASE_SECONDS, QUEUED_TIMEOUT_SECONDS, Cluster  # noqa: E402
from bench.chaos_ledger import TERMINAL, Entry, Fault, Ledger  # noqa: E402
from tests.wire import headers_for, request_body  # noqa: E402

CAPS = {"extensions": {"io.modelcontextprotocol/tasks": {}}, "elicitation": {}}
FAULTS = ("kill-web", "kill-fleet", "redis-restart", "postgres-stop", "failover")
LONGEST_BODY = 4.0
UNAVAILABLE = -32603
"""The code of an answer during an outage (HTTP 503): try again."""
LISTEN_DEADLINE = 90.0
"""A listen stream that has not shown its task's end by then missed it (the longest task ends well within)."""
FLEET_TOOLS = {"fleet": "db_worker", "fleet_rq": "rq", "fleet_celery": "celery"}
"""Each fleet tool, and the worker process whose name starts so."""


class Client:
    """One principal's calls, to any live web worker, with every answer booked."""

    def __init__(self, name: str, cluster: Cluster, ledger: Ledger, rng: random.Random) -> None:
        self.name, self.cluster, self.ledger, self.rng = name, cluster, ledger, rng
        self.http = httpx.AsyncClient(timeout=30)

    async def rpc(self, method: str, params: dict[str, Any], worker: Any = None) -> tuple[Any, dict[str, Any] | None]:
        """(the worker that answered, the JSON-RPC reply or None if it did not answer in JSON)."""
        worker = worker or self.rng.choice(self.cluster.webs)
        body = request_body(method, params, capabilities=CAPS)
        headers = {**headers_for(body), "X-Tenant": self.name}
        try:
            response = await self.http.post(worker.url, content=json.dumps(body), headers=headers)
        except httpx.HTTPError:
            return worker, None  # killed or restarting: not an answer
        self.ledger.answered(response.status_code, "retry-after" in response.headers)
        if response.status_code >= 500:
            said = f"{method}: {response.text[:160]}"
            self.ledger.server_errors.append((time.monotonic(), response.status_code, said))
        try:
            return worker, response.json()
        except ValueError:
            return worker, None

    async def run(self, until: float) -> None:
        while time.monotonic() < until:
            draw = self.rng.random()
            if draw < 0.2:
                await self.plain()
            else:
                tool = "work" if draw < 0.5 else "ask" if draw < 0.7 else self.rng.choice(list(FLEET_TOOLS))
                await self.task(tool)

    async def plain(self) -> None:
        a, b = self.rng.randrange(1000), self.rng.randrange(1000)
        _, reply = await self.rpc("tools/call", {"name": "add", "arguments": {"a": a, "b": b}})
        result = (reply or {}).get("result")
        if result is None:
            self.ledger.plain_calls["not answered"] += 1
        elif result.get("content", [{}])[0].get("text") == str(a + b):
            self.ledger.plain_calls["right"] += 1
        else:
            self.ledger.plain_calls["wrong"] += 1

    async def task(self, tool: str) -> None:
        key = f"{self.name}-{self.rng.randrange(10**9)}"
        seconds = round(self.rng.uniform(0.5, LONGEST_BODY), 2)
        expected = f"ask:{key}:w-{key}" if tool == "ask" else f"{tool}:{key}"
        worker, reply = await self.rpc("tools/call", {"name": tool, "arguments": {"key": key, "seconds": seconds}})
        task = (reply or {}).get("result") or {}
        if "taskId" not in task:
            await asyncio.sleep(0.2)  # refused or not answered: nothing was acknowledged
            return
        owner = FLEET_TOOLS.get(tool, worker.name)
        entry = Entry(task["taskId"], tool, expected, time.monotonic(), owner, self.name)
        self.ledger.entries[entry.task_id] = entry
        await self.follow(entry, key)

    async def listen(self, entry: Entry, key: str) -> None:
        """Follow ``entry`` on a listen stream (``notifications/tasks``) until it ends or the stream does."""
        body = request_body(
            "subscriptions/listen", {"notifications": {"taskIds": [entry.task_id]}}, id="listen", capabilities=CAPS
        )
        headers = {**headers_for(body), "X-Tenant": self.name}
        worker = self.rng.choice(self.cluster.webs)
        try:
            async with (
                asyncio.timeout(LISTEN_DEADLINE),
                self.http.stream(
                    "POST", worker.url, content=json.dumps(body), headers=headers, timeout=httpx.Timeout(10, read=60)
                ) as response,
            ):
                self.ledger.answered(response.status_code, "retry-after" in response.headers)
                if not response.headers.get("content-type", "").startswith("text/event-stream"):
                    self.ledger.listens["refused"] += 1
                    return
                async for line in response.aiter_lines():
                    status = json.loads(line[6:]).get("params", {}).get("status") if line.startswith("data: ") else None
                    if status == "input_required":
                        await self.answer(entry, key)
                    if status in TERMINAL:
                        self.ledger.listens["saw the end"] += 1
                        return
        except TimeoutError:
            # Open, kept alive, yet without the task's end: a notification missed and the stream not ended.
            self.ledger.listens["open without the end"] += 1
            self.ledger.listens_without_end.append(entry.task_id)
            return
        except httpx.HTTPError:
            pass
        self.ledger.listens["ended first"] += 1  # a worker killed, Redis restarted: polling takes over

    async def answer(self, entry: Entry, key: str) -> None:
        """Answer the task's open questions, again while the service is down: an answer lost to an outage
        would leave the task waiting for it (and a listen stream with nothing to show)."""
        answer = {"action": "accept", "content": {"word": f"w-{key}"}}
        for _ in range(120):
            _, reply = await self.rpc("tasks/get", {"taskId": entry.task_id})
            task = (reply or {}).get("result")
            if task is not None:
                answers = dict.fromkeys(task.get("inputRequests") or {}, answer)
                if not answers:
                    return
                _, reply = await self.rpc("tasks/update", {"taskId": entry.task_id, "inputResponses": answers})
                if reply is not None and (reply.get("error") or {}).get("code") != UNAVAILABLE:
                    return  # taken, or refused for good (answered meanwhile)
            await asyncio.sleep(0.5)

    async def follow(self, entry: Entry, key: str) -> None:
        if self.rng.random() < 0.3:
            await self.listen(entry, key)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            _, reply = await self.rpc("tasks/get", {"taskId": entry.task_id})
            task = (reply or {}).get("result")
            if task is None:
                await asyncio.sleep(0.5)
                continue
            entry.seen.append(task["status"])
            if task["status"] in TERMINAL:
                entry.first_terminal, entry.ended_at = task, time.monotonic()
                return
            if task["status"] == "input_required":
                await self.answer(entry, key)
            await asyncio.sleep(0.3)


async def inject(
    cluster: Cluster, ledger: Ledger, rng: random.Random, until: float, mean_gap: float, kinds: tuple[str, ...]
) -> None:
    """Draw a fault of ``kinds`` about every ``mean_gap`` seconds until ``until``; each is over before the next.
    Drawn from a shuffled bag of every kind, refilled when empty: a run long enough meets each kind."""
    bag: list[str] = []
    while True:
        await asyncio.sleep(rng.uniform(mean_gap / 2, mean_gap * 1.5))
        if time.monotonic() >= until:
            return
        if not bag:
            bag = rng.sample(kinds, len(kinds))
        kind = bag.pop()
        fault = Fault(kind, time.monotonic())
        ledger.faults.append(fault)
        if kind in ("kill-web", "kill-fleet"):
            victim = rng.choice(cluster.webs if kind == "kill-web" else cluster.fleet)
            fault.detail = victim.name
            victim.kill()
            await asyncio.sleep(rng.uniform(1, 3))  # a supervisor starts it again
            await asyncio.to_thread(victim.start)
        elif kind == "redis-restart":
            redis = rng.choice([cluster.redis, cluster.rq_redis])
            fault.detail = "RQ's" if redis is cluster.rq_redis else "channel layer and cache"
            await asyncio.to_thread(redis.stop)
            await asyncio.sleep(rng.uniform(1, 5))
            await asyncio.to_thread(redis.start)
        elif kind == "postgres-stop":
            down = rng.uniform(5, 40)
            fault.detail = f"{down:.0f} s"
            node = cluster.nodes[cluster.primary]
            await asyncio.to_thread(node.stop)
            await asyncio.sleep(down)
            await asyncio.to_thread(node.start)
            await asyncio.to_thread(cluster.wait_standby)
        else:
            await asyncio.to_thread(cluster.fail_over)
            fault.detail = f"primary now {cluster.nodes[cluster.primary].data.name}"
        fault.end = time.monotonic()
        print(f"[{fault.start - ledger.started:7.1f}s] {kind} {fault.detail} ({fault.end - fault.start:.1f} s)")


async def final_states(cluster: Cluster, ledger: Ledger, ids: list[str]) -> dict[str, dict[str, Any] | None]:
    """Each task's state as its owner reads it now (None: not found)."""
    judge = Client("judge", cluster, Ledger(), random.Random(0))
    finals: dict[str, dict[str, Any] | None] = {}
    for task_id in ids:
        entry = ledger.entries[task_id]
        judge.name = entry.principal
        for _ in range(20):
            _, reply = await judge.rpc("tasks/get", {"taskId": task_id})
            if reply is None:
                await asyncio.sleep(0.5)
                continue
            finals[task_id] = reply.get("result")  # an error reply: not found, lost
            break
    await judge.http.aclose()
    return finals


async def campaign(cluster: Cluster, options: argparse.Namespace) -> dict[str, Any]:
    minutes, clients, mean_gap, seed = options.minutes, options.clients, options.mean_gap, options.seed
    rng = random.Random(seed)
    ledger = Ledger()
    until = time.monotonic() + minutes * 60
    people = [Client(f"p{i}", cluster, ledger, random.Random(rng.random())) for i in range(clients)]
    kinds = tuple(options.faults.split(","))
    faults = asyncio.create_task(inject(cluster, ledger, random.Random(rng.random()), until, mean_gap, kinds))
    await asyncio.gather(*(person.run(until) for person in people), faults)
    for person in people:
        await person.http.aclose()
    await asyncio.sleep(2 * LEASE_SECONDS + LONGEST_BODY)  # recovery: two leases and the longest body
    finals = await final_states(cluster, ledger, list(ledger.entries))
    # A fleet task whose job went down with a worker killed after taking it, before its body began, has
    # nothing to renew or reap: it fails at its queue timeout, with that reason. Wait for those, no longer.
    queued = [i for i, final in finals.items() if final and final.get("statusMessage") == "Queued for a worker"]
    if queued:
        last = max(ledger.entries[i].created_at for i in queued)
        await asyncio.sleep(max(0.0, last + QUEUED_TIMEOUT_SECONDS + 2 * LEASE_SECONDS - time.monotonic()))
        finals.update(await final_states(cluster, ledger, queued))
    report = ledger.judge(finals)
    report["queued at recovery, then judged after their queue timeout"] = len(queued)
    # A worker that exited on its own strands its queue: nothing here restarts one that was not killed.
    report["exited on their own"] = {p.name: p.output()[-1500:] for p in [*cluster.webs, *cluster.fleet] if p.exited()}
    report["faults"] = [
        {
            "kind": f.kind,
            "at_s": round(f.start - ledger.started, 1),
            "lasted_s": round(f.end - f.start, 1),
            "detail": f.detail,
        }
        for f in ledger.faults
    ]
    return report


def markdown(report: dict[str, Any], options: argparse.Namespace) -> str:
    command = (
        f"python bench/chaos.py --minutes {options.minutes} --seed {options.seed} --clients {options.clients}"
        f" --mean-gap {options.mean_gap} --faults {options.faults} --standby {options.standby}"
    )
    standby = "synchronous" if options.standby == "sync" else "asynchronous"
    lines = [
        "# Chaos run",
        "",
        f"`{command}`: {options.web} web workers (daphne and uvicorn), {options.fleet} `mcp_db_worker`(s), an RQ"
        f" worker (`McpWorker`, its own persistent Redis) and a Celery worker (RabbitMQ); PostgreSQL with"
        f" a{'n' if standby[0] == 'a' else ''} {standby} standby; Redis for the channel layer and cache.",
        "",
        "| verdict | tasks |",
        "| --- | --- |",
        *(f"| {verdict} | {count} |" for verdict, count in sorted(report["verdicts"].items())),
        f"| **acknowledged** | **{report['tasks']}** |",
        "",
        f"Answers: {report['answers']}; 5xx outside fault windows: {report['5xx outside faults']}; inside them,"
        f" 503 with Retry-After: {report['503 inside faults']}, anything else:"
        f" {report['5xx inside faults other than 503 with Retry-After']}. Plain calls: {report['plain calls']}."
        f" Listen streams: {report['listen streams']}. Still queued for a worker after the recovery, so judged"
        f" once their queue timeout ({QUEUED_TIMEOUT_SECONDS:g} s) had passed:"
        f" {report['queued at recovery, then judged after their queue timeout']}.",
        "",
        "| fault | at (s) | lasted (s) | detail |",
        "| --- | --- | --- | --- |",
        *(f"| {f['kind']} | {f['at_s']} | {f['lasted_s']} | {f['detail']} |" for f in report["faults"]),
    ]
    if any(v for k, v in report["examples"].items()):
        lines += ["", "Examples:", "", *(f"- {k}: {e}" for k, es in report["examples"].items() for e in es)]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=15)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--mean-gap", type=float, default=90, help="Mean seconds between faults.")
    parser.add_argument("--web", type=int, default=3)
    parser.add_argument("--fleet", type=int, default=1)
    parser.add_argument("--faults", default=",".join(FAULTS), help=f"Which to draw from (default: {','.join(FAULTS)}).")
    parser.add_argument("--standby", choices=["sync", "async"], default="sync", help="The standby's replication.")
    parser.add_argument("--out", type=Path, help="Write the report as Markdown here.")
    options = parser.parse_args()
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # stopped: still stop every process started
    root = Path(tempfile.mkdtemp(prefix="django-mcp-chaos-"))
    cluster = Cluster(root, web=options.web, fleet=options.fleet, synchronous=options.standby == "sync")
    try:
        cluster.start()
        report = asyncio.run(campaign(cluster, options))
    finally:
        cluster.stop()
        shutil.rmtree(root, ignore_errors=True)
    print(json.dumps(report, indent=2))
    if options.out:
        options.out.write_text(markdown(report, options))
    fine = ("completed right", "failed: its owner was killed")
    bad = sum(count for verdict, count in report["verdicts"].items() if verdict not in fine)
    bad += report["5xx outside faults"] + report["5xx inside faults other than 503 with Retry-After"]
    bad += report["listen streams"].get("open without the end", 0)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
