import pytest
from django.db import connections

from tests.toolapp.tools import EVENTS


@pytest.fixture(autouse=True)
def _clear_events():
    EVENTS.clear()
    yield


@pytest.fixture(autouse=True)
def _close_thread_connections():
    """Sync tools run in asgiref worker threads; close what they opened there."""
    yield
    connections.close_all()
