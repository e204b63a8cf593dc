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
    """Pooled PostgreSQL connections outlive their threads: close them before the test DB is dropped."""
    yield
    with django_db_blocker.unblock():
        for conn in connections.all():
            close_pool = getattr(conn, "close_pool", None)
            if close_pool is not None:
                close_pool()
        connections.close_all()
