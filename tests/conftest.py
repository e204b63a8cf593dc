import gc
import os
import subprocess
import warnings

import pytest
from asgiref.sync import sync_to_async
from django.db import connections

from tests.task_servers import stop_all_tasks
from tests.toolapp.tools import EVENTS


@pytest.fixture
def private_redis():
    """A redis-server of the test's own on a free loopback port (skipped where there is none)."""
    import shutil

    from tests.live.servers import Redis

    if shutil.which("redis-server") is None:
        pytest.skip("needs redis-server")
    server = Redis()
    server.start()
    yield server
    server.stop()


@pytest.fixture(autouse=True)
def _clear_events():
    EVENTS.clear()
    yield


@pytest.fixture(autouse=True)
def _monitor_figures_read_afresh(monkeypatch):
    """Each test's monitor reads its own rows: never figures another test's page left in the shared cache."""
    import django_mcp.monitor

    monkeypatch.setattr(django_mcp.monitor, "FRESH_SECONDS", 0.0)


@pytest.fixture(autouse=True)
def _forget_verified_tokens():
    """Each test's tokens are its own: none remembered from another test's rows (token strings repeat)."""
    from django_mcp.auth import cache

    cache.forget_all()


@pytest.fixture(autouse=True)
async def _close_thread_connections():
    """The async ORM of a test runs in asgiref's sync thread: close what it opened there, and here."""
    yield
    await sync_to_async(connections.close_all)()
    connections.close_all()


@pytest.fixture(autouse=True)
async def _stop_tasks(_close_thread_connections):
    """Every task body a test started stops before the next test (and before its connections close)."""
    yield
    await stop_all_tasks()


@pytest.fixture(scope="session", autouse=True)
def _close_connection_pools(django_db_setup, django_db_blocker):
    """Pooled PostgreSQL connections outlive their threads: close them before the test DB is dropped.

    So do the event loops' own connections (``loop_read_pg``) of a loop that ended without shutting
    down its async generators, or while one of them was in use: closed here, not at exit (after the drop).
    CI's 3.12 leg still warned once after this ("1 other session using the database"); reproduced once
    in two local runs: two never-used sessions (a pool's prewarmed connections?) opened mid-run.
    ``_report_other_sessions`` names what is left, and the process holding it, in the warnings summary
    (a session fixture's stderr is captured at teardown).
    """
    yield
    from django_mcp.tasks.store import loop_postgres

    loop_postgres._close()
    gc.collect()  # a connection only an ended loop's task still held
    with django_db_blocker.unblock():
        for conn in connections.all():
            close_pool = getattr(conn, "close_pool", None)
            if close_pool is not None:
                close_pool()
        connections.close_all()
        _report_other_sessions()


def _report_other_sessions() -> None:
    """Name any session still on the test database (it would keep pytest-django from dropping it)."""
    default = connections["default"]
    if default.vendor != "postgresql":
        return
    options = {key: value for key, value in default.settings_dict["OPTIONS"].items() if key != "pool"}
    conn = type(default)({**default.settings_dict, "OPTIONS": options}, "default")  # no pool of its own
    try:
        with conn.cursor() as cursor:
            cursor.execute(
                "SELECT pid, client_port, state, backend_start, query FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
            others = cursor.fetchall()
    finally:
        conn.close()
    for other in others:
        warnings.warn(
            f"still connected to the test database at teardown (pytest is pid {os.getpid()}): "
            f"{other!r} {_sockets_on(other[1])}",
            stacklevel=1,
        )


def _sockets_on(port: int) -> list[str]:
    """``ss``'s lines for a local TCP port, naming the process that holds it (none where ``ss`` is missing)."""
    try:
        listing = subprocess.run(["ss", "-tnp"], capture_output=True, text=True, check=False).stdout
    except OSError:
        return []
    return [line for line in listing.splitlines() if f":{port} " in line]
