"""Database state for the bench, outside the MCP API: migrate, empty, and bulk-insert finished tasks.

Run by the harness in its venv with the same environment as the django_mcp server it prepares
(``BENCH_DB``, ``BENCH_SQLITE`` / ``PG*``), so it reaches the same database:

    python -m bench.seed reset --tasks 1000000 --sample 2000 --out ids.json
    python -m bench.seed redis-clean --url redis://127.0.0.1:6379/5 --prefix bench-abc
    python -m bench.seed pgstats --out stats.json
    python -m bench.seed staff

On PostgreSQL the rows are made by one ``INSERT ... SELECT FROM generate_series`` in the server
(no rows cross the wire), in the ``bench`` schema of the database (``search_path``), so nothing
else in that database is touched. SQLite gets a ``bulk_create``. Every row is a ``completed``
``instant`` task owned by ``anonymous`` (the bench client's binding), like the ones the API makes.
The caps' counter rows (``TaskQuota``) are set to the rows written, as the store would have kept them.
"""

from __future__ import annotations

import argparse
import json
import os
import time
import uuid
from datetime import timedelta

from django.utils import timezone

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.djbench.settings")

SCHEMA = os.environ.get("BENCH_PG_SCHEMA", "bench")


def _setup(migrate: bool = True) -> None:
    if os.environ.get("BENCH_DB") == "postgres":
        import psycopg

        with psycopg.connect(
            host=os.environ.get("PGHOST", "127.0.0.1"),
            port=os.environ.get("PGPORT", "5432"),
            user=os.environ.get("PGUSER", "postgres"),
            password=os.environ.get("PGPASSWORD", ""),
            dbname=os.environ.get("PGDATABASE", "test"),
            autocommit=True,
        ) as conn:
            conn.execute(f"CREATE SCHEMA IF NOT EXISTS {SCHEMA}")
    elif os.environ.get("BENCH_DB") == "mysql":
        import MySQLdb

        conn = MySQLdb.connect(
            host=os.environ.get("MYSQL_HOST", "127.0.0.1"),
            port=int(os.environ.get("MYSQL_PORT", "3306")),
            user=os.environ.get("MYSQL_USER", "root"),
            password=os.environ.get("MYSQL_PASSWORD", ""),
        )
        try:
            database = os.environ.get("MYSQL_DATABASE", "bench")
            conn.cursor().execute(f"CREATE DATABASE IF NOT EXISTS `{database}` CHARACTER SET utf8mb4")
        finally:
            conn.close()
    import django

    django.setup()
    if not migrate:  # pgstats: no statement of its own before the reading
        return
    from django.core.management import call_command

    call_command("migrate", verbosity=0, interactive=False)


def reset(tasks: int, sample: int) -> dict:
    """Replace every task by ``tasks`` copies of the newest one (which the harness made through the API).

    Copying a real row keeps the seeded tasks exactly what the server would have stored (its owner
    binding, result shape and any column a later migration adds), with fresh ids and creation times.
    """
    from django.db import connection

    from django_mcp.tasks.models import Task, TaskQuota

    started = time.monotonic()
    template = Task.objects.order_by("-created_at").first()
    if template is None or template.status != "completed":
        raise SystemExit("reset needs a completed task made through the API first (the template)")
    table = connection.ops.quote_name(Task._meta.db_table)
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            columns = [f.column for f in Task._meta.concrete_fields]
            computed = {
                "id": "gen_random_uuid()",
                "created_at": "t.created_at - g * interval '1 millisecond'",
                "expires_at": "now() + interval '2 hours'",
            }
            select = ", ".join(computed.get(c, f"t.{connection.ops.quote_name(c)}") for c in columns)
            names = ", ".join(connection.ops.quote_name(c) for c in columns)
            cursor.execute(
                "CREATE TEMP TABLE bench_template AS SELECT * FROM " + table + " WHERE id = %s", [template.pk]
            )
            cursor.execute(f"TRUNCATE {table}")
            cursor.execute(
                f"INSERT INTO {table} ({names}) SELECT {select} FROM bench_template t, generate_series(1, %s) AS g",
                [tasks],
            )
            cursor.execute("DROP TABLE bench_template")
            cursor.execute(f"VACUUM ANALYZE {table}")
            # Write the new rows out now, not in a checkpoint during the measurements (creation commits).
            cursor.execute("CHECKPOINT")
            cursor.execute(f"SELECT id FROM {table} ORDER BY random() LIMIT %s", [sample])
            ids = [str(row[0]) for row in cursor.fetchall()]
        else:
            values = {f.attname: getattr(template, f.attname) for f in Task._meta.concrete_fields}
            now = timezone.now()
            rows = [
                Task(
                    **{
                        **values,
                        "id": uuid.uuid4(),
                        "created_at": template.created_at - timedelta(milliseconds=i),
                        "expires_at": now + timedelta(hours=2),
                    }
                )
                for i in range(tasks)
            ]
            cursor.execute(f"DELETE FROM {table}")
            Task.objects.bulk_create(rows, batch_size=2000)
            ids = [str(t.id) for t in rows[:sample]]
    # The rows were written outside the store: the server's counter is what the store would have kept.
    TaskQuota.objects.all().delete()
    TaskQuota.objects.create(scope=template.scope, owner="", count=tasks)
    return {"tasks": tasks, "owner": template.owner, "ids": ids, "seconds": round(time.monotonic() - started, 2)}


def clear() -> None:
    """Delete every task (the memory and cross-worker scenarios start from an empty table)."""
    from django.db import connection

    from django_mcp.tasks.models import Task, TaskQuota

    with connection.cursor() as cursor:
        for model in (Task, TaskQuota):
            table = connection.ops.quote_name(model._meta.db_table)
            cursor.execute(f"TRUNCATE {table}" if connection.vendor == "postgresql" else f"DELETE FROM {table}")


def pgstats() -> dict:
    """The database's committed transactions and the scans of the task table (pg_stat_*; PostgreSQL only)."""
    from django.db import connection

    from django_mcp.tasks.models import Task

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_clear_snapshot()")
        cursor.execute("SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()")
        (commits,) = cursor.fetchone()
        cursor.execute(
            "SELECT coalesce(seq_scan, 0) + coalesce(idx_scan, 0) FROM pg_stat_user_tables "
            "WHERE schemaname = %s AND relname = %s",
            [SCHEMA, Task._meta.db_table],
        )
        row = cursor.fetchone()
    return {"xact_commit": int(commits), "task_scans": int(row[0]) if row else 0, "at": time.time()}


def redis_clean(url: str, prefix: str) -> int:
    import redis

    client = redis.Redis.from_url(url)
    removed = 0
    for pattern in (f"{prefix}*", f"{{{prefix}}}*"):
        batch = list(client.scan_iter(match=pattern, count=1000))
        for at in range(0, len(batch), 500):
            removed += client.delete(*batch[at : at + 500])
    return removed


def token() -> dict:
    """A token of the user ``bench`` (the authenticated targets' caller): a personal token, or in the deployed
    shape an access token django-oauth-toolkit issued to a registered client for the endpoint."""
    from django.conf import settings
    from django.contrib.auth.models import User

    from django_mcp.models import PersonalToken

    user, _ = User.objects.get_or_create(username="bench")
    if not getattr(settings, "DEPLOYED", False):
        _, issued = PersonalToken.issue(user, "bench")
        return {"token": issued}
    import secrets
    from datetime import timedelta

    from django.utils import timezone
    from oauth2_provider.models import AccessToken, Application

    client, _ = Application.objects.get_or_create(
        name="bench client",
        defaults={
            "client_type": Application.CLIENT_PUBLIC,
            "authorization_grant_type": Application.GRANT_AUTHORIZATION_CODE,
            "redirect_uris": "http://127.0.0.1/callback",
        },
    )
    access = AccessToken.objects.create(
        user=user,
        application=client,
        token=secrets.token_urlsafe(32),
        scope="mcp",
        # With sign-in off (bench/ablate.py's "-auth") no endpoint checks it: any resource will do.
        resource=[settings.DJANGO_MCP.get("OAUTH_RESOURCE_URL", "http://127.0.0.1/mcp/")],
        expires=timezone.now() + timedelta(hours=2),
    )
    return {"token": access.token}


def main() -> None:
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("migrate")
    sub.add_parser("clear")
    r = sub.add_parser("reset")
    r.add_argument("--tasks", type=int, default=1000)
    r.add_argument("--sample", type=int, default=1000)
    r.add_argument("--out", required=True)
    sub.add_parser("pgstats").add_argument("--out", required=True)
    sub.add_parser("token").add_argument("--out", required=True)
    sub.add_parser("staff")  # a superuser "bench" (password "bench"), for the task monitor's viewers
    c = sub.add_parser("redis-clean")
    c.add_argument("--url", required=True)
    c.add_argument("--prefix", required=True)
    args = parser.parse_args()
    if args.command == "redis-clean":
        print(json.dumps({"removed": redis_clean(args.url, args.prefix)}))
        return
    _setup(migrate=args.command != "pgstats")
    if args.command == "clear":
        clear()
    if args.command == "pgstats":
        with open(args.out, "w") as fh:
            json.dump(pgstats(), fh)
    if args.command == "token":
        with open(args.out, "w") as fh:
            json.dump(token(), fh)
    if args.command == "staff":
        from django.contrib.auth import get_user_model

        if not get_user_model().objects.filter(username="bench").exists():
            get_user_model().objects.create_superuser("bench", "bench@example.com", "bench")
    if args.command == "reset":
        result = reset(args.tasks, args.sample)
        with open(args.out, "w") as fh:
            json.dump(result, fh)
        print(json.dumps({k: v for k, v in result.items() if k != "ids"}))


if __name__ == "__main__":
    main()
