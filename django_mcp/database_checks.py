"""The system checks that read the databases' settings or ask the databases (``Tags.database``).

``check --database ALIAS``, ``migrate`` and the test runner run them; a plain ``check`` does not.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.apps import AppConfig
from django.conf import settings
from django.core import checks
from django.core.checks import CheckMessage, Tags, register
from django.db import DatabaseError, connections

POOL_WAIT_LIMIT_SECONDS = 10.0
"""Check W011: the longest a PostgreSQL pool may make a request wait, or back off reconnecting."""
_PSYCOPG_POOL_DEFAULTS = {"timeout": 30.0, "reconnect_timeout": 300.0}


@register(Tags.database)
def check_database_pool(
    app_configs: Sequence[AppConfig] | None = None, databases: Sequence[str] | None = None, **kwargs: Any
) -> list[CheckMessage]:
    """W011: a PostgreSQL connection pool that waits long for a database that is down.

    psycopg's defaults make each request wait 30 s for a connection before it can answer 503, and back
    off reconnecting for up to 300 s, so service resumes long after the database is back.
    """
    messages: list[CheckMessage] = []
    for alias, db in settings.DATABASES.items():
        engine = str(db.get("ENGINE", ""))
        pool = (db.get("OPTIONS") or {}).get("pool")
        if not pool or not ("postgresql" in engine or "postgis" in engine):
            continue
        options = {**_PSYCOPG_POOL_DEFAULTS, **(pool if isinstance(pool, dict) else {})}
        try:
            timeout, reconnect = float(options["timeout"]), float(options["reconnect_timeout"])
        except (TypeError, ValueError):  # psycopg reports those itself
            continue
        if timeout <= POOL_WAIT_LIMIT_SECONDS and reconnect <= POOL_WAIT_LIMIT_SECONDS:
            continue
        messages.append(
            checks.Warning(
                f"Database {alias!r}: while the database is down its connection pool makes each request wait up "
                f"to {timeout:g} s before it can answer 503, and backs off reconnecting for up to {reconnect:g} s, "
                "so service resumes late once it is back.",
                hint='Set OPTIONS = {"pool": {"timeout": 5, "reconnect_timeout": 5}, "connect_timeout": 3} '
                "(both pool values at most "
                f"{POOL_WAIT_LIMIT_SECONDS:g} s): requests then answer -32603 'Database unavailable' (HTTP 503) "
                "within 5 s and service resumes within a second or two of the database returning.",
                obj=alias,
                id="django_mcp.W011",
            )
        )
    return messages


@register(Tags.database)
def check_mysql_time_zones(
    app_configs: Sequence[AppConfig] | None = None, databases: Sequence[str] | None = None, **kwargs: Any
) -> list[CheckMessage]:
    """W019: MySQL or MariaDB without its time zone tables while the project converts times to ``TIME_ZONE``.

    Django converts in SQL (``CONVERT_TZ``), which answers NULL without them: the admin's lists of tasks
    and tool calls fail ("Database returned an invalid datetime value").
    """
    if not settings.USE_TZ or settings.TIME_ZONE == "UTC":
        return []
    messages: list[CheckMessage] = []
    for alias in databases or ():
        connection = connections[alias]
        if connection.vendor != "mysql":
            continue
        try:
            with connection.cursor() as cursor:
                cursor.execute("SELECT CONVERT_TZ('2000-01-01 00:00:00', 'UTC', %s)", [settings.TIME_ZONE])
                (converted,) = cursor.fetchone()
        except DatabaseError:  # unreachable: Django's own checks and migrate say so
            continue
        if converted is None:
            messages.append(
                checks.Warning(
                    f"Database {alias!r} has no time zone tables, so it cannot convert times to TIME_ZONE "
                    f"{settings.TIME_ZONE!r}: the admin's lists of tasks and tool calls fail.",
                    hint="Load them once (as its administrator): mysql_tzinfo_to_sql /usr/share/zoneinfo | "
                    "mysql -u root mysql",
                    obj=alias,
                    id="django_mcp.W019",
                )
            )
    return messages
