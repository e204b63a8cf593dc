"""The load generator: a separate process (pinned by the harness to its own core) that speaks the
2026-07-28 wire over raw asyncio sockets (HTTP/1.1 keep-alive, one connection per concurrent
client), so the client costs little next to the server it measures.

It reads one job per line (JSON) on stdin and answers one result per line (JSON) on stdout, so one
process serves a whole run. Every loop is bounded by a request count AND a wall-clock cap.

Jobs (``kind``):

- ``closed_loop``: ``concurrency`` clients each send a request as soon as the previous one
  answered, ``warmup_s`` unmeasured, then at most ``max_requests`` measured requests within
  ``max_seconds``; answers req/s and latency percentiles. The requests are pre-built bytes
  (``requests``: a list of request specs; each client picks one at random per request).
- ``e2e``: ``tasks`` tool calls of the ``sleep`` tool (``sleep_ms``), ``concurrency`` at a time; the
  client learns the end by polling ``tasks/get`` every ``pollIntervalMs`` (``mode: poll``) or from a
  ``subscriptions/listen`` stream (``mode: listen``). Answers time-to-known-finished, the lag past
  ``sleep_ms``, and requests per task.
- ``create_many``: create ``count`` tasks (for the memory and parked scenarios and to fill a server
  that cannot be seeded with SQL), optionally waiting until every one of them is terminal (or in one
  of ``wait_for``); ``capabilities`` are declared beside the tasks extension (e.g. ``elicitation``).
- ``xworker_cancel``: create a long task on worker A, watch it on a listen stream on worker B, cancel
  it on B; answers the time from sending the cancel until B's stream shows ``cancelled``.
- ``probe``: one request; answers status and body (for the harness's checks).
"""

from __future__ import annotations

import asyncio
import json
import random
import sys
import time
from datetime import datetime
from typing import Any

VERSION = "2026-07-28"
TASKS_EXT = {"extensions": {"io.modelcontextprotocol/tasks": {}}}
TERMINAL = {"completed", "failed", "cancelled"}
_NAME_PARAMS = {"tools/call": "name", "tasks/get": "taskId", "tasks/update": "taskId", "tasks/cancel": "taskId"}


def _now() -> float:
    return time.perf_counter()


def _after_ms(task: dict[str, Any]) -> float | None:
    """How long after the task's own ``lastUpdatedAt`` (the server's wall clock, same machine) we saw it."""
    try:
        stamp = datetime.fromisoformat(task["lastUpdatedAt"].replace("Z", "+00:00")).timestamp()
    except (KeyError, ValueError, AttributeError):
        return None
    return (time.time() - stamp) * 1000


# ---------------------------------------------------------------------------------------------- wire


def build_request(host: str, path: str, spec: dict[str, Any], request_id: Any = 1) -> bytes:
    """The bytes of one conforming POST: headers mirror the body (wire-reference §1.3, tests/wire.py)."""
    method = spec["method"]
    params = dict(spec.get("params") or {})
    capabilities = {**(TASKS_EXT if spec.get("tasks") else {}), **(spec.get("capabilities") or {})}
    params["_meta"] = {
        "io.modelcontextprotocol/protocolVersion": VERSION,
        "io.modelcontextprotocol/clientCapabilities": capabilities,
        "io.modelcontextprotocol/clientInfo": {"name": "django-mcp-bench", "version": "1"},
    }
    body = json.dumps(
        {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}, separators=(",", ":")
    ).encode()
    lines = [
        f"POST {path} HTTP/1.1",
        f"Host: {host}",
        "Content-Type: application/json",
        "Accept: application/json, text/event-stream",
        f"MCP-Protocol-Version: {VERSION}",
        f"Mcp-Method: {method}",
    ]
    name_param = _NAME_PARAMS.get(method)
    if name_param and isinstance(params.get(name_param), str):
        lines.append(f"Mcp-Name: {params[name_param]}")  # ids and tool names here are plain ASCII
    lines += [f"{name}: {value}" for name, value in _job_headers.items()]
    lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


class Connection:
    """One keep-alive HTTP/1.1 connection; Content-Length and chunked bodies, and SSE streams."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def open(self) -> None:
        self.reader, self.writer = await asyncio.open_connection(self.host, self.port, limit=1 << 20)

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        self.reader = self.writer = None

    async def _head(self) -> tuple[int, bytes]:
        assert self.reader is not None
        head = await self.reader.readuntil(b"\r\n\r\n")
        return int(head[9:12]), head.lower()

    async def request(self, data: bytes) -> tuple[int, bytes]:
        if self.writer is None:
            await self.open()
        assert self.reader is not None and self.writer is not None
        self.writer.write(data)
        status, head = await self._head()
        if b"transfer-encoding: chunked" in head:
            parts = []
            while True:
                size = int((await self.reader.readuntil(b"\r\n"))[:-2].split(b";")[0], 16)
                if size == 0:
                    await self.reader.readuntil(b"\r\n")
                    break
                parts.append((await self.reader.readexactly(size + 2))[:-2])
            body = b"".join(parts)
        else:
            at = head.find(b"content-length:")
            length = int(head[at + 15 : head.index(b"\r\n", at)]) if at >= 0 else 0
            body = await self.reader.readexactly(length) if length else b""
        if b"connection: close" in head:
            self.close()
        return status, body

    async def open_stream(self, data: bytes) -> tuple[int, bytes]:
        """Send a request whose answer may be an SSE stream; returns the status and content type."""
        if self.writer is None:
            await self.open()
        assert self.writer is not None
        self.writer.write(data)
        status, head = await self._head()
        self._chunked = b"transfer-encoding: chunked" in head
        self._buffer = b""
        at = head.find(b"content-type:")
        ctype = head[at + 13 : head.index(b"\r\n", at)].strip() if at >= 0 else b""
        return status, ctype

    async def _more(self) -> bytes:
        assert self.reader is not None
        if not self._chunked:
            chunk = await self.reader.read(65536)
            if not chunk:
                raise EOFError
            return chunk
        size = int((await self.reader.readuntil(b"\r\n"))[:-2].split(b";")[0], 16)
        if size == 0:
            raise EOFError
        return (await self.reader.readexactly(size + 2))[:-2]

    async def event(self) -> dict[str, Any]:
        """The next JSON-RPC message on the SSE stream (comments and keepalives skipped)."""
        while True:
            end = self._buffer.find(b"\n\n")
            if end >= 0:
                block, self._buffer = self._buffer[:end], self._buffer[end + 2 :]
                data = [line[5:].strip() for line in block.split(b"\n") if line.startswith(b"data:")]
                if data:
                    return json.loads(b"\n".join(data))
                continue
            self._buffer += await self._more()


def percentiles(values: list[float]) -> dict[str, float | None]:
    if not values:
        return {"p50": None, "p90": None, "p99": None, "max": None, "mean": None}
    ordered = sorted(values)

    def pick(q: float) -> float:
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]

    return {
        "p50": round(pick(0.50), 3),
        "p90": round(pick(0.90), 3),
        "p99": round(pick(0.99), 3),
        "max": round(ordered[-1], 3),
        "mean": round(sum(ordered) / len(ordered), 3),
    }


# ---------------------------------------------------------------------------------------------- jobs


async def closed_loop(job: dict[str, Any]) -> dict[str, Any]:
    host, port, path = job["host"], job["port"], job["path"]
    payloads = [build_request(f"{host}:{port}", path, spec) for spec in job["requests"]]
    expect = job.get("expect", "").encode()
    concurrency = job["concurrency"]
    max_requests, max_seconds, warmup = job["max_requests"], job["max_seconds"], job.get("warmup_s", 0.5)
    start = _now()
    window_start = start + warmup
    deadline = window_start + max_seconds
    latencies: list[float] = []
    state = {"errors": 0, "sample_error": None, "last": window_start, "stop": False}

    async def client() -> None:
        conn = Connection(host, port)
        try:
            while not state["stop"]:
                t0 = _now()
                if t0 >= deadline:
                    return
                data = payloads[random.randrange(len(payloads))] if len(payloads) > 1 else payloads[0]
                try:
                    status, body = await conn.request(data)
                except (OSError, asyncio.IncompleteReadError, ValueError) as exc:
                    conn.close()
                    status, body = -1, repr(exc).encode()
                t1 = _now()
                if t0 < window_start:
                    continue
                if status != 200 or (expect and expect not in body):
                    state["errors"] += 1
                    state["sample_error"] = state["sample_error"] or f"{status} {body[:300]!r}"
                    if status == -1:
                        await asyncio.sleep(0.01)
                    continue
                latencies.append((t1 - t0) * 1000)
                state["last"] = max(state["last"], t1)
                if len(latencies) >= max_requests:
                    state["stop"] = True
        finally:
            conn.close()

    await asyncio.wait_for(asyncio.gather(*(client() for _ in range(concurrency))), warmup + max_seconds + 30)
    window = max(state["last"] - window_start, 1e-9)
    return {
        "requests": len(latencies),
        "errors": state["errors"],
        "sample_error": state["sample_error"],
        "seconds": round(window, 3),
        "rps": round(len(latencies) / window, 1) if latencies else 0.0,
        "latency_ms": percentiles(latencies),
    }


async def _create(
    conn: Connection,
    authority: str,
    path: str,
    tool: str,
    arguments: dict[str, Any],
    capabilities: dict[str, Any] | None = None,
) -> dict[str, Any]:
    spec = {
        "method": "tools/call",
        "params": {"name": tool, "arguments": arguments},
        "tasks": True,
        "capabilities": capabilities or {},
    }
    status, body = await conn.request(build_request(authority, path, spec))
    answer = json.loads(body)
    if status != 200 or "result" not in answer or answer["result"].get("resultType") != "task":
        raise RuntimeError(f"no task handle: {status} {body[:300]!r}")
    return answer["result"]


async def _get(conn: Connection, authority: str, path: str, task_id: str) -> dict[str, Any]:
    spec = {"method": "tasks/get", "params": {"taskId": task_id}, "tasks": True}
    status, body = await conn.request(build_request(authority, path, spec))
    answer = json.loads(body)
    if status != 200 or "result" not in answer:
        raise RuntimeError(f"tasks/get failed: {status} {body[:300]!r}")
    return answer["result"]


async def _listen(conn: Connection, authority: str, path: str, task_id: str) -> dict[str, Any]:
    """Open a listen stream on ``task_id``; returns the acknowledgement (raises if unsupported)."""
    spec = {"method": "subscriptions/listen", "params": {"notifications": {"taskIds": [task_id]}}, "tasks": True}
    status, ctype = await conn.open_stream(build_request(authority, path, spec, request_id="bench-listen"))
    if status != 200 or not ctype.startswith(b"text/event-stream"):
        conn._chunked = True  # read the (error) body for the report
        raise NotImplementedError(f"subscriptions/listen answered HTTP {status} {ctype.decode()}")
    ack = await conn.event()
    if ack.get("method") != "notifications/subscriptions/acknowledged" or task_id not in ack["params"][
        "notifications"
    ].get("taskIds", []):
        raise NotImplementedError(f"listen did not honour taskIds: {json.dumps(ack)[:300]}")
    return ack


async def e2e(job: dict[str, Any]) -> dict[str, Any]:
    host, port, path = job["host"], job["port"], job["path"]
    authority = f"{host}:{port}"
    sleep_ms, mode = job["sleep_ms"], job["mode"]
    deadline = _now() + job["max_seconds"]
    totals: list[float] = []
    lags: list[float] = []
    afters: list[float] = []
    requests: list[int] = []
    state: dict[str, Any] = {"left": job["tasks"], "errors": 0, "sample_error": None, "unsupported": None}

    async def flow() -> None:
        conn = Connection(host, port)
        try:
            while state["left"] > 0 and _now() < deadline and state["unsupported"] is None:
                state["left"] -= 1
                t0 = _now()
                after: float | None = None
                try:
                    handle = await _create(conn, authority, path, "sleep", {"ms": sleep_ms})
                    count = 1
                    if mode == "poll":
                        interval = handle.get("pollIntervalMs", 1000) / 1000
                        while True:
                            await asyncio.sleep(interval)
                            current = await _get(conn, authority, path, handle["taskId"])
                            count += 1
                            if current["status"] in TERMINAL:
                                after = _after_ms(current)
                                break
                            interval = current.get("pollIntervalMs", interval * 1000) / 1000
                            if _now() > deadline + 30:
                                raise TimeoutError("task did not finish")
                    else:
                        stream = Connection(host, port)
                        try:
                            await _listen(stream, authority, path, handle["taskId"])
                            count += 1
                            while True:
                                message = await asyncio.wait_for(stream.event(), sleep_ms / 1000 + 30)
                                if message.get("method") == "notifications/tasks" and (
                                    message["params"]["status"] in TERMINAL
                                ):
                                    after = _after_ms(message["params"])
                                    break
                        finally:
                            stream.close()
                except NotImplementedError as exc:
                    state["unsupported"] = str(exc)
                    return
                except (OSError, RuntimeError, TimeoutError, ValueError, asyncio.IncompleteReadError) as exc:
                    state["errors"] += 1
                    state["sample_error"] = state["sample_error"] or repr(exc)[:300]
                    conn.close()
                    continue
                total = (_now() - t0) * 1000
                totals.append(total)
                lags.append(total - sleep_ms)
                requests.append(count)
                if after is not None:
                    afters.append(after)
        finally:
            conn.close()

    await asyncio.wait_for(
        asyncio.gather(*(flow() for _ in range(job["concurrency"]))), job["max_seconds"] + sleep_ms / 1000 + 60
    )
    return {
        "tasks": len(totals),
        "errors": state["errors"],
        "sample_error": state["sample_error"],
        "unsupported": state["unsupported"],
        "total_ms": percentiles(totals),
        "lag_ms": percentiles(lags),
        "after_ms": percentiles(afters),
        "requests_per_task": round(sum(requests) / len(requests), 2) if requests else None,
    }


async def create_many(job: dict[str, Any]) -> dict[str, Any]:
    host, port, path = job["host"], job["port"], job["path"]
    authority = f"{host}:{port}"
    deadline = _now() + job["max_seconds"]
    ids: list[str] = []
    state: dict[str, Any] = {"left": job["count"], "errors": 0, "sample_error": None}
    started = _now()

    async def client() -> None:
        conn = Connection(host, port)
        try:
            while state["left"] > 0 and _now() < deadline:
                state["left"] -= 1
                try:
                    handle = await _create(
                        conn, authority, path, job["tool"], job.get("arguments", {}), job.get("capabilities")
                    )
                    ids.append(handle["taskId"])
                except (OSError, RuntimeError, ValueError, asyncio.IncompleteReadError) as exc:
                    state["errors"] += 1
                    state["sample_error"] = state["sample_error"] or repr(exc)[:300]
                    conn.close()
        finally:
            conn.close()

    await asyncio.wait_for(asyncio.gather(*(client() for _ in range(job["concurrency"]))), job["max_seconds"] + 30)
    created_s = _now() - started
    last_status = None
    unfinished = 0
    if job.get("wait_terminal") and ids:
        # Every task, in creation order, until each is terminal (a queue-backed server finishes them late),
        # or in one of ``wait_for`` (e.g. ``input_required`` for the parked scenario).
        wanted = set(job.get("wait_for") or TERMINAL)
        conn = Connection(host, port)
        try:
            until = _now() + job.get("wait_seconds", 60)
            for at, task_id in enumerate(ids):
                while True:
                    last_status = (await _get(conn, authority, path, task_id))["status"]
                    if last_status in wanted or last_status in TERMINAL or _now() >= until:
                        break
                    await asyncio.sleep(0.05)
                if last_status not in wanted:
                    unfinished = len(ids) - at
                    break
        finally:
            conn.close()
    keep = job.get("return_ids", 0)
    return {
        "created": len(ids),
        "errors": state["errors"],
        "sample_error": state["sample_error"],
        "seconds": round(created_s, 3),
        "rps": round(len(ids) / created_s, 1) if ids else 0.0,
        "last_status": last_status,
        "unfinished": unfinished,
        "ids": ids[:keep] if keep else [],
    }


async def xworker_cancel(job: dict[str, Any]) -> dict[str, Any]:
    host = job["host"]
    a_port, b_port, path = job["port_a"], job["port_b"], job["path"]
    deadline = _now() + job["max_seconds"]
    samples: list[float] = []
    state: dict[str, Any] = {"errors": 0, "sample_error": None}
    conn_a, conn_b = Connection(host, a_port), Connection(host, b_port)
    try:
        for _ in range(job["samples"]):
            if _now() >= deadline:
                break
            stream = Connection(host, b_port)
            try:
                handle = await _create(conn_a, f"{host}:{a_port}", path, "sleep", {"ms": 120_000})
                task_id = handle["taskId"]
                await _listen(stream, f"{host}:{b_port}", path, task_id)
                snapshot = await asyncio.wait_for(stream.event(), 10)
                assert snapshot["params"]["status"] == "working", snapshot
                spec = {"method": "tasks/cancel", "params": {"taskId": task_id}, "tasks": True}
                t0 = _now()
                status, body = await conn_b.request(build_request(f"{host}:{b_port}", path, spec))
                if status != 200:
                    raise RuntimeError(f"cancel: {status} {body[:200]!r}")
                while True:
                    message = await asyncio.wait_for(stream.event(), 10)
                    if message.get("method") == "notifications/tasks" and message["params"]["status"] == "cancelled":
                        break
                samples.append((_now() - t0) * 1000)
            except (
                OSError,
                RuntimeError,
                AssertionError,
                TimeoutError,
                ValueError,
                asyncio.IncompleteReadError,
            ) as exc:
                state["errors"] += 1
                state["sample_error"] = state["sample_error"] or repr(exc)[:300]
                conn_a.close()
                conn_b.close()
            finally:
                stream.close()
    finally:
        conn_a.close()
        conn_b.close()
    return {"samples": len(samples), **state, "cancel_seen_ms": percentiles(samples)}


async def fanout(job: dict[str, Any]) -> dict[str, Any]:
    """``listeners`` listen streams on one task that updates its status ``rate`` times a second (the
    ``ticking`` tool), and ``concurrency`` clients calling ``call`` meanwhile: those calls' latency, and
    whether every listener received the task's final state. The same calls with no stream open first.
    """
    host, port, path = job["host"], job["port"], job["path"]
    authority = f"{host}:{port}"
    seconds, allowance, count = job["seconds"], job["open_allowance_s"], job["listeners"]
    calls = {
        "kind": "closed_loop",
        "host": host,
        "port": port,
        "path": path,
        "requests": [job["call"]],
        "expect": job["expect"],
        "concurrency": job["concurrency"],
        "max_requests": 1_000_000,
        "max_seconds": seconds,
        "warmup_s": 0.5,
    }
    quiet = await closed_loop(calls)
    conn = Connection(host, port)
    try:
        runs_s = allowance + seconds + 1.5
        handle = await _create(conn, authority, path, "ticking", {"rate": job["rate"], "seconds": runs_s})
    finally:
        conn.close()
    task_id, started = handle["taskId"], _now()
    listeners = [Connection(host, port) for _ in range(count)]
    last: dict[int, str] = {}
    received = [0] * count

    async def follow(index: int) -> None:
        try:
            while True:
                frame = await listeners[index].event()
                if frame.get("method") == "notifications/tasks":
                    received[index] += 1
                    last[index] = frame["params"].get("status", "")
                elif "result" in frame or "error" in frame:
                    return
        except (OSError, EOFError, asyncio.IncompleteReadError, ValueError):
            return

    readers: list[asyncio.Task[None]] = []
    try:
        for first in range(0, count, 50):
            batch = range(first, min(count, first + 50))
            await asyncio.gather(*(_listen(listeners[i], authority, path, task_id) for i in batch))
            readers += [asyncio.ensure_future(follow(i)) for i in batch]
            if _now() - started > allowance:
                raise RuntimeError(f"{len(readers)} of {count} listeners open after {allowance} s: the task ends first")
        opened_s = _now() - started
        loaded = await closed_loop(calls)
        await asyncio.wait(readers, timeout=max(1.0, started + runs_s + 30 - _now()))
    finally:
        for reader in readers:
            reader.cancel()
        for listener in listeners:
            listener.close()
    return {
        "listeners": count,
        "rate": job["rate"],
        "open_s": round(opened_s, 2),
        "quiet": quiet,
        "loaded": loaded,
        "rps": loaded["rps"],
        "latency_ms": loaded["latency_ms"],
        "errors": loaded["errors"] + quiet["errors"],
        "sample_error": loaded["sample_error"] or quiet["sample_error"],
        "updates": round(job["rate"] * runs_s),
        "received_per_listener": percentiles([float(n) for n in received]),
        "final_state_received": sum(status == "completed" for status in last.values()),
    }


async def probe(job: dict[str, Any]) -> dict[str, Any]:
    conn = Connection(job["host"], job["port"])
    try:
        status, body = await asyncio.wait_for(
            conn.request(build_request(f"{job['host']}:{job['port']}", job["path"], job["request"])), 10
        )
    finally:
        conn.close()
    return {"status": status, "body": body.decode(errors="replace")}


JOBS = {
    "closed_loop": closed_loop,
    "e2e": e2e,
    "create_many": create_many,
    "xworker_cancel": xworker_cancel,
    "probe": probe,
    "fanout": fanout,
}


_job_headers: dict[str, str] = {}  # e.g. Authorization: one job runs at a time, every request of it sends them


async def serve() -> None:
    loop = asyncio.get_running_loop()
    while True:
        line = await loop.run_in_executor(None, sys.stdin.readline)
        if not line:
            return
        job = json.loads(line)
        _job_headers.clear()
        _job_headers.update(job.get("headers") or {})
        try:
            result = await JOBS[job["kind"]](job)
        except Exception as exc:  # reported to the harness, which records it in the results
            result = {"failed": f"{type(exc).__name__}: {exc}"[:500]}
        sys.stdout.write(json.dumps(result) + "\n")
        sys.stdout.flush()


def main() -> None:
    try:
        import uvloop  # less client overhead where available (the harness venv has it)

        uvloop.run(serve())
    except ImportError:
        asyncio.run(serve())


if __name__ == "__main__":
    main()
