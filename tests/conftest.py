import gc

import pytest
from asgiref.sync import sync_to_async
from django.db import connections

from tests.toolapp.tools import EVENTS


@pytest.fixture(autouse=True)
def _clear_events():
    EVENTS.clear()
    yield


@pytest.fixture(autouse=True)
async def _close_thread_connections():
    """The async ORM of a test runs in asgiref's sync thread: close what it opened there, and here."""
    yield
    await sync_to_async(connections.close_all)()
    connections.close_all()


@pytest.fixture(scope="session", autouse=True)
def _close_connection_pools(django_db_setup, django_db_blocker):
    """Pooled PostgreSQL connections outlive their threads: close them before the test DB is dropped.

    So do the event loops' own connections (``loop_read_pg``) of a loop that ended without shutting
    down its async generators, or while one of them was in use: closed here, not at exit (which
    comes after the drop, and left CI warning "1 other session using the database").
    """
    yield
    from django_mcp.tasks import loop_read_pg

    loop_read_pg._close()
    gc.collect()  # a connection only an ended loop's task still held
    with django_db_blocker.unblock():
        for conn in connections.all():
            close_pool = getattr(conn, "close_pool", None)
            if close_pool is not None:
                close_pool()
        connections.close_all()
