"""Check W019: MySQL or MariaDB without the time zone tables Django's date conversions need."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any

import pytest
from django.db import connections

from django_mcp import database_checks
from django_mcp.database_checks import check_mysql_time_zones


class _Cursor:
    def __init__(self, converted: Any) -> None:
        self.converted, self.executed = converted, []

    def execute(self, sql: str, params: list[str]) -> None:
        self.executed.append((sql, params))

    def fetchone(self) -> tuple[Any]:
        return (self.converted,)


class _MySQL:
    """A connection that answers CONVERT_TZ as a server with (a datetime) or without (NULL) its tables."""

    vendor = "mysql"

    def __init__(self, converted: Any) -> None:
        self.cursor_ = _Cursor(converted)

    @contextmanager
    def cursor(self):
        yield self.cursor_


def _w019(monkeypatch, settings, converted: Any, zone: str = "Europe/Berlin") -> tuple[list, _MySQL]:
    settings.TIME_ZONE = zone
    connection = _MySQL(converted)
    monkeypatch.setattr(database_checks, "connections", {"default": connection})
    return check_mysql_time_zones(databases=["default"]), connection


def test_w019_names_the_missing_time_zone_tables_and_how_to_load_them(monkeypatch, settings):
    [warning], connection = _w019(monkeypatch, settings, None)
    assert warning.id == "django_mcp.W019" and warning.obj == "default"
    assert "no time zone tables" in warning.msg and "'Europe/Berlin'" in warning.msg
    assert "mysql_tzinfo_to_sql /usr/share/zoneinfo" in warning.hint
    assert connection.cursor_.executed[0][1] == ["Europe/Berlin"]


def test_w019_is_silent_with_the_tables_or_in_utc(monkeypatch, settings):
    assert _w019(monkeypatch, settings, "2000-01-01 01:00:00")[0] == []
    assert _w019(monkeypatch, settings, None, zone="UTC")[0] == []  # Django converts nothing then


@pytest.mark.django_db
def test_w019_on_the_suites_own_database(settings):
    # On the MariaDB leg, .ci/run loads the tables: silent. Elsewhere the check does not apply.
    settings.TIME_ZONE = "Europe/Berlin"
    assert check_mysql_time_zones(databases=list(connections)) == []
