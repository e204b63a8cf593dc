"""The task monitor's queries over a large tasks table: their plans and times (issue: "a million stored tasks
must not make the page slow").

    .venv/bin/python bench/monitor_rows.py [--rows 1000000] [--database postgres|mysql|sqlite] [--json FILE]

Fills a database of its own (PostgreSQL ``monitor_rows``, MariaDB ``monitor_rows``, or a SQLite file in a
temporary directory) with ``--rows`` tasks shaped like a busy server's retained history: 98 % finished over
the last 30 days, 1 % finished in the last hour, the rest working, parked or queued for a fleet, a few of
them stranded by a stopped process. Then times :func:`django_mcp.tasks.store.monitor.snapshot` (median of 5)
and prints each of its statements with the database's plan (``EXPLAIN ANALYZE`` on PostgreSQL, ``EXPLAIN QUERY
PLAN`` on SQLite, ``EXPLAIN`` on MariaDB).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def configure(database: str) -> None:
    os.environ["DJANGO_SETTINGS_MODULE"] = "tests.settings"
    os.environ["DJANGO_MCP_DATABASE"] = database
    if database == "postgres":
        os.environ.setdefault("PGHOST", "127.0.0.1")
        os.environ.setdefault("PGUSER", "postgres")
        os.environ["PGDATABASE"] = "monitor_rows"
    elif database == "mysql":
        os.environ.setdefault("MYSQL_HOST", "127.0.0.1")
        os.environ.setdefault("MYSQL_USER", "root")
        os.environ["MYSQL_DATABASE"] = "monitor_rows"
    else:
        os.environ["DJANGO_MCP_SQLITE"] = str(Path(tempfile.mkdtemp()) / "monitor.sqlite3")
    import django

    django.setup()


def fill(rows: int) -> None:
    """``rows`` tasks in batches of 10,000 (the ORM's bulk insert: the same on every database)."""
    import uuid
    from datetime import timedelta

    from django.utils import timezone

    from django_mcp.models import Task

    now, batch = timezone.now(), []
    for i in range(rows):
        share = i % 100
        if share < 98:  # finished over the last 30 days
            created = now - timedelta(seconds=3600 + (i * 2_591_000) // rows)
            status, node, backend, lease = ("completed" if i % 10 else "failed"), "web-1", "", None
            updated = created + timedelta(seconds=5 + i % 60)
        elif share == 98:  # finished in the last hour
            created = now - timedelta(seconds=i % 3500 + 60)
            status, node, backend, lease = ("completed" if i % 7 else "failed"), "web-2", "", None
            updated = created + timedelta(seconds=30)
        else:  # active: running, parked, queued, a few stranded
            created = now - timedelta(seconds=i % 600)
            status = "input_required" if i % 5 == 0 else "working"
            node, backend = ("", "default") if i % 3 == 0 else (f"web-{i % 4}", "")
            lease = now + timedelta(seconds=15) if i % 50 else now - timedelta(minutes=5)
            updated = created
        error = {"code": -32603, "message": f"upstream answered {500 + i % 4}"} if status == "failed" else None
        batch.append(
            Task(
                id=uuid.uuid4(), status=status, tool=f"tool_{i % 12}", owner="sha256:" + "a" * 64,
                owner_kind="principal", poll_interval_ms=500, created_at=created, updated_at=updated,
                scope=f"server_{i % 3}", node=node, backend=backend, lease_expires_at=lease, error=error,
                expires_at=created + timedelta(days=31),
            )
        )  # fmt: skip
        if len(batch) == 10_000:
            Task.objects.bulk_create(batch)
            batch.clear()
    if batch:
        Task.objects.bulk_create(batch)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--database", choices=("postgres", "mysql", "sqlite"), default="postgres")
    parser.add_argument("--json")
    args = parser.parse_args()
    configure(args.database)

    from datetime import timedelta

    from django.core.management import call_command
    from django.db import connection
    from django.test.utils import CaptureQueriesContext
    from django.utils import timezone

    from django_mcp.models import Task
    from django_mcp.tasks.store.monitor import servers, snapshot

    if args.database != "sqlite":
        _recreate(args.database)
    call_command("migrate", verbosity=0)
    started = time.monotonic()
    fill(args.rows)
    filled = time.monotonic() - started
    if args.database == "postgres":
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE django_mcp_task")
    print(f"{Task.objects.count():,} tasks ({filled:.0f} s to insert)")

    def every_server() -> None:
        snapshot(timezone.now(), timedelta(hours=1), None, 600)
        servers()

    def one_server() -> None:
        snapshot(timezone.now(), timedelta(hours=1), "server_1", 600)

    every_server()  # warm
    seconds = statistics.median(timed(every_server) for _ in range(5))
    scoped = statistics.median(timed(one_server) for _ in range(5))
    with CaptureQueriesContext(connection) as captured:
        every_server()
    print(f"snapshot + servers: median {seconds * 1000:.0f} ms over 5 runs ({len(captured)} statements); "
          f"one server: {scoped * 1000:.0f} ms")  # fmt: skip
    plans = []
    explain = {"postgres": "EXPLAIN ANALYZE ", "sqlite": "EXPLAIN QUERY PLAN "}.get(args.database, "EXPLAIN ")
    for query in captured.captured_queries:
        with connection.cursor() as cursor:
            cursor.execute(explain + query["sql"])
            plan = "\n".join(" | ".join(str(c) for c in row) for row in cursor.fetchall())
        plans.append({"sql": query["sql"], "seconds": float(query["time"]), "plan": plan})
        print(f"\n-- {float(query['time']) * 1000:.1f} ms: {query['sql'][:300]}\n{plan}")
    if args.json:
        result = {"rows": args.rows, "database": args.database, "median_seconds": seconds, "scoped_seconds": scoped}
        Path(args.json).write_text(json.dumps({**result, "statements": plans}, indent=1))


def timed(work: Callable[[], None]) -> float:
    started = time.perf_counter()
    work()
    return time.perf_counter() - started


def _recreate(database: str) -> None:
    """An empty database of the bench's own (never the suite's)."""
    from django.db import connection

    with connection._nodb_cursor() as cursor:  # Django's own way to reach the server without a database
        if database == "postgres":
            cursor.execute("DROP DATABASE IF EXISTS monitor_rows")
            cursor.execute("CREATE DATABASE monitor_rows")
        else:
            cursor.execute("DROP DATABASE IF EXISTS monitor_rows")
            cursor.execute("CREATE DATABASE monitor_rows CHARACTER SET utf8mb4")


if __name__ == "__main__":
    main()
