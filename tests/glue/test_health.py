"""``/health/live`` and ``/health/ready`` (``django_mcp.health``), and ``manage.py mcp_health``."""

from __future__ import annotations

import json
from datetime import timedelta
from io import StringIO
from unittest import mock

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import OperationalError
from django.utils import timezone

from django_mcp.models import Task

pytestmark = pytest.mark.django_db(transaction=True)


async def test_live_answers_without_touching_anything(async_client):
    with mock.patch("django_mcp.health._ping_database", side_effect=AssertionError("not called")):
        response = await async_client.get("/health/live")
    assert (response.status_code, json.loads(response.content)) == (200, {"status": "ok"})


async def test_ready_checks_the_database_the_layer_and_the_fleet(async_client):
    response = await async_client.get("/health/ready")
    body = json.loads(response.content)
    assert response.status_code == 200 and body["status"] == "ok"
    assert set(body["checks"]) == {"database", "channel_layer", "fleet"}  # the test project has a fleet server
    assert all(check["ok"] for check in body["checks"].values())


async def test_a_database_down_is_503_and_names_no_host(async_client):
    secret = OperationalError('connection to server at "db.internal" (10.0.0.7), port 5432 failed')
    with mock.patch("django_mcp.health._ping_database", side_effect=secret):
        response = await async_client.get("/health/ready")
    assert response.status_code == 503
    body = json.loads(response.content)
    assert body["status"] == "unavailable"
    assert body["checks"]["database"] == {"ok": False, "ms": body["checks"]["database"]["ms"], "detail": "unreachable"}
    assert "db.internal" not in response.content.decode() and "10.0.0.7" not in response.content.decode()


async def test_a_hanging_check_fails_within_its_timeout(async_client, monkeypatch):
    import asyncio

    from django_mcp import health

    async def hang():
        await asyncio.sleep(30)

    monkeypatch.setattr(health, "CHECK_TIMEOUT_SECONDS", 0.2)
    monkeypatch.setattr(health, "_achannel_layer", hang)
    response = await async_client.get("/health/ready")
    assert response.status_code == 503
    assert json.loads(response.content)["checks"]["channel_layer"]["detail"] == "no answer within 0.2 s"


async def test_a_fleet_task_nobody_claims_makes_it_unready(async_client, settings):
    settings.DJANGO_MCP = {**settings.DJANGO_MCP, "TASK_QUEUED_TIMEOUT_SECONDS": 60}
    await Task.objects.acreate(
        tool="sync_sleeper",
        owner="o",
        scope="mcp_fleet",
        poll_interval_ms=100,
        node="",
        backend="fleet",
        created_at=timezone.now() - timedelta(minutes=5),
    )
    response = await async_client.get("/health/ready")
    assert response.status_code == 503
    assert json.loads(response.content)["checks"]["fleet"]["detail"].startswith("a task has waited")


def test_the_command_prints_the_checks_and_fails_when_not_ready():
    out = StringIO()
    call_command("mcp_health", stdout=out)
    assert json.loads(out.getvalue())["database"]["ok"] is True
    with (
        mock.patch("django_mcp.health._ping_database", side_effect=OperationalError("down")),
        pytest.raises(CommandError, match="Not ready: database"),
    ):
        call_command("mcp_health", stdout=StringIO())


async def test_the_ready_probe_is_not_logged_per_request(async_client, caplog):
    import logging

    with (
        mock.patch("django_mcp.health._ping_database", side_effect=OperationalError("down")),
        caplog.at_level(logging.WARNING, logger="django.request"),
    ):
        for _ in range(3):
            assert (await async_client.get("/health/ready")).status_code == 503
    assert not [r for r in caplog.records if r.name == "django.request"]
