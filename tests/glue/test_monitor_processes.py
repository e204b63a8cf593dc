"""The monitor's processes: the workers last seen, the silent ones, and every process's listen streams."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth.models import Permission, User
from django.utils import timezone

from django_mcp.tasks.models import Node
from django_mcp.tasks.store.monitor import snapshot
from tests.task_rows import make_task

pytestmark = pytest.mark.django_db

MONITOR = "/admin/django_mcp/taskmonitor/"
LEASE = 15.0


def node(name: str, seconds_ago: float, **fields: object) -> Node:
    seen = timezone.now() - timedelta(seconds=seconds_ago)
    defaults: dict[str, object] = {"server": "a", "role": "web", "host": "web-1", "pid": 100, "command": "daphne"}
    return Node.objects.create(name=name, started_at=seen - timedelta(hours=1), seen_at=seen, **{**defaults, **fields})


def figures(scope: str | None = None):
    return snapshot(timezone.now(), timedelta(hours=1), scope, None, None, LEASE)


def test_processes_seen_in_the_hour_newest_first_with_the_tasks_they_run():
    node("web-a", 2, pid=1)
    node("worker-a", 600, role="worker", pid=2, command="manage.py db_worker")
    node("long-gone", 2 * 3600, pid=3)
    make_task(status="working", node="web-a", lease_expires_at=timezone.now() + timedelta(seconds=10), scope="a")
    make_task(status="working", node="no-row-yet", lease_expires_at=timezone.now() + timedelta(seconds=10))
    rows = [(w.node, w.running, w.process is not None) for w in figures().workers]
    assert rows == [("web-a", 1, True), ("worker-a", 0, True), ("no-row-yet", 1, False)]


def test_silent_is_a_web_process_or_a_busy_worker_not_seen_for_a_lease():
    node("web-quiet", LEASE + 5, pid=1)
    node("web-alive", 1, pid=2)
    node("worker-idle", 600, role="worker", pid=3)  # between jobs a worker writes nothing
    node("worker-died", 600, role="worker", pid=4, running=1)
    silent = {w.node for w in figures().workers if w.silent}
    assert silent == {"web-quiet", "worker-died"}


def test_listen_streams_of_every_live_process_counted_once_per_process():
    node("p1-server-a", 1, host="h1", pid=1, listen_streams=4)
    node("p1-server-b", 1, host="h1", pid=1, server="b", listen_streams=4)  # one process, two servers
    node("p2", 1, host="h2", pid=1, listen_streams=3)
    node("p3-stopped", LEASE + 5, host="h3", pid=1, listen_streams=50)
    assert figures().listen_streams == 7
    assert figures("b").listen_streams == 4


def test_without_any_row_the_count_is_unknown():
    assert figures().listen_streams is None


@pytest.fixture
def staff_client(client):
    user = User.objects.create_user("staff", "s@example.com", "pw", is_staff=True)
    user.user_permissions.add(Permission.objects.get(codename="view_task"))
    client.force_login(user)
    return client


def test_the_page_names_each_process_says_when_it_was_seen_and_flags_the_silent(staff_client):
    node("web-b", 3, pid=4242, host="web-b.internal", listen_streams=2)
    node("worker-b", 60, role="worker", pid=77, host="jobs-1", command="manage.py db_worker", listen_streams=0)
    node("web-c", 120, pid=5, host="web-c.internal", listen_streams=9)
    page = staff_client.get(MONITOR).content.decode()
    section = page[page.index('id="monitor-workers"') :]
    assert "web server: <code>daphne</code>, pid 4242 on web-b.internal" in section
    assert "fleet worker: <code>manage.py db_worker</code>, pid 77 on jobs-1" in section
    assert section.count('class="silent"') == 1 and "silent: stopped?" in section
    assert "1\xa0minute ago" in section  # timesince's non-breaking space
    status = page[page.index('id="monitor-status"') : page.index('id="monitor-minutes"')]
    assert "Listen streams open</th>" in status and '<td class="figure">2</td>' in status  # web-c is silent


def test_before_any_process_wrote_its_row_the_page_counts_this_process_s_streams(staff_client):
    page = staff_client.get(MONITOR).content.decode()
    assert "Listen streams open here</th>" in page
    assert "No process has run tasks in the last hour." in page
