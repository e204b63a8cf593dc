"""The admin's task monitor: who may see it, and what it shows of running, stalled, finished and failed tasks."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
import time_machine
from django.contrib.auth.models import Permission, User
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

import django_mcp.monitor
from django_mcp.conf import get_settings
from django_mcp.monitor import chart
from django_mcp.shared_caches import shared_cache
from django_mcp.tasks.store.monitor import Minute, snapshot
from tests.task_rows import make_task

pytestmark = pytest.mark.django_db

MONITOR = "/admin/django_mcp/taskmonitor/"


@pytest.fixture
def staff(client):
    def login(*codenames: str) -> User:
        user = User.objects.create_user("staff", "s@example.com", "pw", is_staff=True)
        user.user_permissions.add(*Permission.objects.filter(codename__in=codenames))
        client.force_login(user)
        return user

    return login


def seed() -> dict[str, object]:
    """A server's hour: two done, two failed for one reason, one running, one stranded, one never claimed."""
    now = timezone.now()
    ago = lambda minutes: now - timedelta(minutes=minutes)  # noqa: E731
    rows = {
        "done": make_task(tool="report", status="completed", created_at=ago(12), updated_at=ago(10), scope="a"),
        "done2": make_task(tool="report", status="completed", created_at=ago(9), updated_at=ago(5), scope="a"),
        "failed": make_task(
            tool="fetch",
            status="failed",
            error={"code": -32603, "message": "upstream 502"},
            created_at=ago(4),
            updated_at=ago(3),
            scope="a",
        ),
        "failed2": make_task(
            tool="fetch",
            status="failed",
            error={"code": -32603, "message": "upstream 502"},
            created_at=ago(3),
            updated_at=ago(2),
            scope="a",
        ),
        "running": make_task(status="working", node="web-1", lease_expires_at=now + timedelta(seconds=10), scope="a"),
        "stranded": make_task(status="working", node="web-gone", lease_expires_at=ago(1), scope="a"),
        "unclaimed": make_task(status="working", node="", backend="default", created_at=ago(30), scope="b"),
        "old": make_task(tool="report", status="completed", created_at=ago(300), updated_at=ago(290), scope="a"),
    }
    return rows


def test_the_monitor_needs_the_tasks_view_permission(client, staff):
    assert client.get(MONITOR).status_code == 302  # to the admin's login
    staff()
    assert client.get(MONITOR).status_code == 403
    client.logout()
    User.objects.all().delete()
    staff("view_task")
    assert client.get(MONITOR).status_code == 200


def test_the_task_list_and_the_admin_index_link_to_the_monitor(client, staff):
    staff("view_task")
    assert f'href="{MONITOR}"' in client.get("/admin/django_mcp/task/").content.decode()
    assert f'href="{MONITOR}"' in client.get("/admin/").content.decode()


def test_the_figures_of_the_last_hour(settings):
    rows = seed()
    figures = snapshot(timezone.now(), timedelta(hours=1), None, queued_timeout=600)
    assert figures.active == {"working": 3}
    assert figures.finished == {"completed": 2, "failed": 2}  # the one of five hours ago is outside the window
    assert figures.queued == 1
    assert {(w.node, w.running) for w in figures.workers} == {("web-1", 1), ("web-gone", 1)}
    report = next(d for d in figures.durations if d.tool == "report")
    assert report.finished == 2 and report.p50_seconds == pytest.approx(180, abs=1)  # 2 and 4 minutes
    assert [(f.reason, f.tasks, f.latest.pk) for f in figures.failures] == [("upstream 502", 2, rows["failed2"].pk)]
    assert {(s.task.pk, s.why) for s in figures.stalled} == {
        (rows["stranded"].pk, "its process stopped renewing its lease"),
        (rows["unclaimed"].pk, "no worker started it within its queue timeout"),  # 30 minutes, past 600 s
    }
    assert sum(m.created for m in figures.minutes) == 7 and len(figures.minutes) == 61


def test_a_fleet_task_is_stalled_only_past_its_queue_timeout():
    rows = seed()
    for timeout in (3600, None):  # 30 minutes queued: within an hour's timeout, and never without one
        stalled = snapshot(timezone.now(), timedelta(hours=1), None, queued_timeout=timeout).stalled
        assert [s.task.pk for s in stalled] == [rows["stranded"].pk]


def test_a_task_waiting_for_an_answer_is_stalled_past_its_wait():
    now = timezone.now()
    two_hours_ago = now - timedelta(hours=2)
    asking = make_task(status="input_required", created_at=now - timedelta(hours=3), updated_at=two_hours_ago)
    make_task(status="input_required", updated_at=now - timedelta(minutes=5))  # asked a moment ago
    make_task(status="working", node="web-1", lease_expires_at=now + timedelta(seconds=10), updated_at=two_hours_ago)
    orphan = make_task(  # its process is gone too: listed once, for that
        status="input_required", node="web-gone", lease_expires_at=now - timedelta(minutes=1), updated_at=two_hours_ago
    )
    stalled = snapshot(now, timedelta(hours=1), None, None, input_wait=3600).stalled
    assert sorted((s.task.pk, s.why) for s in stalled) == sorted(
        [
            (asking.pk, "it has waited for an answer for over 3600 s"),
            (orphan.pk, "its process stopped renewing its lease"),
        ]
    )
    assert [s.task.pk for s in snapshot(now, timedelta(hours=1), None, None, input_wait=None).stalled] == [orphan.pk]


def test_the_page_flags_a_task_waiting_past_the_wait_setting(client, staff, settings):
    settings.DJANGO_MCP = {**settings.DJANGO_MCP, "TASK_INPUT_WAIT_SECONDS": 60}
    asking = make_task(status="input_required", updated_at=timezone.now() - timedelta(minutes=2))
    staff("view_task")
    page = client.get(MONITOR).content.decode()
    assert "it has waited for an answer for over 60 s" in page and f"/admin/django_mcp/task/{asking.pk}/" in page


def test_one_server_at_a_time(client, staff):
    rows = seed()
    staff("view_task")
    page = client.get(MONITOR, {"server": "b"}).content.decode()
    assert '<option value="b" selected>' in page
    figures = snapshot(timezone.now(), timedelta(hours=1), "b", queued_timeout=600)
    assert figures.active == {"working": 1} and figures.finished == {} and figures.queued == 1
    assert str(rows["stranded"].pk)[:8] not in page  # server a's stranded task is not on b's page
    everything = client.get(MONITOR, {"server": "no-such-server"}).content.decode()
    assert str(rows["stranded"].pk)[:8] in everything  # an unknown server shows every server


def test_the_page_shows_what_a_person_looks_for(client, staff):
    rows = seed()
    staff("view_task")
    page = client.get(MONITOR).content.decode()
    assert "upstream 502" in page
    assert f"/admin/django_mcp/task/{rows['stranded'].pk}/change/" in page
    assert "its process stopped renewing its lease" in page
    assert "<code>web-gone</code>" in page
    assert page.count('class="completed"') >= 2 and page.count('class="failed"') >= 1  # the chart's bars
    assert 'id="monitor-audit"' not in page  # the audit log is off


def test_with_the_audit_log_on_calls_per_tool_errors_and_top_callers(client, staff, settings):
    from django_mcp.audit import ToolCall

    settings.DJANGO_MCP = {**settings.DJANGO_MCP, "AUDIT": True}
    for outcome in ("result", "result", "error", "refused"):
        ToolCall.objects.create(caller="user:ada", server="a", tool="fetch", outcome=outcome, duration_ms=1)
    ToolCall.objects.create(caller="anonymous@10.0.0.9", server="a", tool="echo", outcome="result", duration_ms=1)
    old = ToolCall.objects.create(caller="user:old", server="a", tool="old", outcome="error", duration_ms=1)
    ToolCall.objects.filter(pk=old.pk).update(created_at=timezone.now() - timedelta(hours=2))
    staff("view_task")
    page = client.get(MONITOR).content.decode()
    assert page.count('id="monitor-audit"') == 1
    section = page[page.index('id="monitor-audit"') :]
    assert "<td>fetch</td><td>4</td><td>2 (50 %)</td>" in section
    assert "<td>user:ada</td><td>4</td>" in section and "anonymous@10.0.0.9" in section
    assert "user:old" not in section  # outside the last hour


def test_the_chart_scales_to_its_busiest_minute():
    now = timezone.now().replace(second=0, microsecond=0)
    bars, peak = chart([Minute(now, created=4, completed=2, failed=2), Minute(now, created=1), Minute(now)])
    assert peak == 4
    assert bars[0].created_height == 80 and [(s, h) for s, _, h in bars[0].stack] == [("completed", 40), ("failed", 40)]
    assert bars[0].stack[1][1] == 0  # stacked to the top
    assert bars[1].created_height == 20 and bars[1].stack == []
    assert chart([Minute(now)])[1] == 1  # an idle hour: no division by zero


def _read_tasks(queries: CaptureQueriesContext) -> bool:
    return any(re.search(r"[\"`]django_mcp_task[\"`]", query["sql"]) for query in queries.captured_queries)


@pytest.fixture
def shared_for_a_minute(monkeypatch):
    """Figures shared for 60 s, starting from none (other tests' pages leave theirs in the cache)."""
    monkeypatch.setattr(django_mcp.monitor, "FRESH_SECONDS", 60.0)
    names = ("servers", "servers:reading", "figures:*", "figures:*:reading")
    shared_cache(get_settings().SESSION_CACHE).delete_many([f"{django_mcp.monitor.SHARED_KEY}:{n}" for n in names])


@pytest.mark.usefixtures("shared_for_a_minute")
def test_every_viewer_gets_the_figures_one_read(client, staff):
    make_task(status="working", node="web-1", lease_expires_at=timezone.now() + timedelta(seconds=10))
    staff("view_task")
    with CaptureQueriesContext(connection) as first:
        client.get(MONITOR)
    make_task(status="input_required")
    with CaptureQueriesContext(connection) as second:
        page = client.get(MONITOR).content.decode()
    assert _read_tasks(first) and not _read_tasks(second)
    assert '<th>Input Required</th><td class="figure">0</td>' in page  # the first read's figures


@pytest.mark.usefixtures("shared_for_a_minute")
def test_figures_past_their_freshness_are_read_again_by_one_viewer_only(client, staff):
    staff("view_task")
    client.get(MONITOR)
    make_task(status="input_required")
    cache = shared_cache(get_settings().SESSION_CACHE)
    with time_machine.travel(timezone.now() + timedelta(seconds=61)):
        locks = [f"{django_mcp.monitor.SHARED_KEY}:{name}:reading" for name in ("servers", "figures:*")]
        cache.set_many(dict.fromkeys(locks, 1), 10)  # another viewer reads them
        with CaptureQueriesContext(connection) as waiting:
            held = client.get(MONITOR).content.decode()
        cache.delete_many(locks)
        with CaptureQueriesContext(connection) as reading:
            fresh = client.get(MONITOR).content.decode()
    assert not _read_tasks(waiting) and '<th>Input Required</th><td class="figure">0</td>' in held
    assert _read_tasks(reading) and '<th>Input Required</th><td class="figure">1</td>' in fresh


def test_without_the_shared_cache_each_viewer_reads_the_figures(client, staff, monkeypatch):
    class Down:
        def get(self, *args, **kwargs):
            raise ConnectionError("cache down")

        set = add = delete = get

    monkeypatch.setattr(django_mcp.monitor, "shared_cache", lambda alias: Down())
    make_task(status="input_required")
    staff("view_task")
    page = client.get(MONITOR)
    assert page.status_code == 200 and '<th>Input Required</th><td class="figure">1</td>' in page.content.decode()
