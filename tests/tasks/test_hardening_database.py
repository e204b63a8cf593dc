"""Regression tests for the "Hardening" issue, database outages: bounded 503s, bounded logs, check W011.

With psycopg's pool defaults a request waits 30 s for a connection while PostgreSQL is down, and the
pool backs off reconnecting for up to 300 s once it is back (measured: 30 s per request, no service
120 s after the restart). ``tests/live/test_outages.py`` measures the recommended options against a
private PostgreSQL that it stops and starts: 503 within 5 s, service back in well under a second.
"""

from __future__ import annotations

import json
import logging

import pytest
from django.core import checks
from django.test import override_settings

from tests.wire import post, request_body

PG = "django.db.backends.postgresql"
RECOMMENDED = {"pool": {"timeout": 5, "reconnect_timeout": 5}, "connect_timeout": 3}


def _w011(databases):
    from django_mcp.database_checks import check_database_pool

    with override_settings(DATABASES=databases):
        return check_database_pool()


@pytest.mark.filterwarnings("ignore:Overriding setting DATABASES")
@pytest.mark.parametrize(
    "options, waits",
    [
        ({"pool": True}, "30 s"),  # psycopg's defaults: 30 s and 300 s
        ({"pool": {"min_size": 2}}, "30 s"),
        ({"pool": {"timeout": 30, "reconnect_timeout": 5}}, "30 s"),
        ({"pool": {"timeout": 5}}, "300 s"),
    ],
)
def test_w011_a_pool_that_waits_long_for_a_database_that_is_down(options, waits):
    [message] = _w011({"default": {"ENGINE": PG, "NAME": "x", "OPTIONS": options}})
    assert message.id == "django_mcp.W011" and message.level == checks.WARNING and message.obj == "default"
    assert waits in message.msg
    assert '"timeout": 5, "reconnect_timeout": 5' in message.hint


@pytest.mark.filterwarnings("ignore:Overriding setting DATABASES")
@pytest.mark.parametrize(
    "database",
    [
        {"ENGINE": PG, "NAME": "x", "OPTIONS": RECOMMENDED},
        {"ENGINE": PG, "NAME": "x", "OPTIONS": {"pool": {"timeout": 10, "reconnect_timeout": 10}}},
        {"ENGINE": PG, "NAME": "x"},  # no pool: a refused connection fails at once
        {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:", "OPTIONS": {"pool": True}},
        {"ENGINE": PG, "NAME": "x", "OPTIONS": {"pool": {"timeout": "soon"}}},  # psycopg's own error
    ],
)
def test_no_w011(database):
    assert _w011({"default": database}) == []


@pytest.mark.filterwarnings("ignore:Overriding setting DATABASES")
def test_w011_once_per_offending_alias():
    messages = _w011(
        {
            "default": {"ENGINE": PG, "NAME": "x", "OPTIONS": RECOMMENDED},
            "replica": {"ENGINE": PG, "NAME": "y", "OPTIONS": {"pool": True}},
        }
    )
    assert [m.obj for m in messages] == ["replica"]


def test_w011_is_registered_with_the_database_checks():
    from django.core.checks import registry

    from django_mcp.database_checks import check_database_pool

    assert check_database_pool in registry.registry.registered_checks
    assert list(check_database_pool.tags) == [checks.Tags.database]


async def test_a_database_outage_logs_a_bounded_number_of_lines(async_client, caplog):
    """Every request still gets its 503; the log gets one line, not two per request."""
    from django_mcp.server.outages import throttle

    throttle.reset()  # this test sees the first failure of an outage
    caplog.set_level(logging.WARNING, logger="django_mcp")
    for _ in range(50):
        response = await post(
            async_client,
            request_body("server/discover"),
            path="/mcp-bearer/",
            headers={"Authorization": "Bearer db-down"},
        )
        assert response.status_code == 503 and response["Retry-After"] == "2"  # when to try again
        error = json.loads(response.content)["error"]
        assert error == {"code": -32603, "message": "Database unavailable: try again shortly"}
    lines = [r for r in caplog.records if r.name == "django_mcp" and "Database unavailable" in r.getMessage()]
    assert len(lines) == 1
