"""The task monitor in headless Chromium: read at 1280 px and 1400 px, light and dark; then live under daphne,
a task created over MCP showing up and completing without a reload, and a task cancelled from its live page.

Set DJANGO_MCP_SCREENSHOTS to a directory to keep the screenshots (docs/_static/monitor/ has them).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from tests.chromium import CHROMIUM, Browser, admin_sign_in, opened_browser
from tests.live.servers import server_process, sqlite_project
from tests.task_calls import EXT
from tests.task_rows import make_task
from tests.wire import headers_for, request_body

pytestmark = [
    pytest.mark.live,
    pytest.mark.skipif(CHROMIUM is None, reason="needs chromium (Debian: apt-get install chromium; .ci/run does)"),
    pytest.mark.timeout(120),
]

MONITOR = "/admin/django_mcp/taskmonitor/"

MEASURE = """(() => {
  const box = el => el.getBoundingClientRect();
  return {
    title: document.title,
    text: document.querySelector('#content').innerText,
    scrollWidth: document.documentElement.scrollWidth,
    innerWidth: innerWidth,
    sections: [...document.querySelectorAll('.mcp-monitor > section')].map(s => ({id: s.id, width: box(s).width})),
    bars: document.querySelectorAll('#monitor-minutes rect').length,
    background: getComputedStyle(document.body).backgroundColor,
    live: (document.getElementById('monitor-live-state') || {}).textContent,
  };
})()"""


def keep(browser: Browser, tmp_path: Path, name: str) -> bytes:
    return browser.screenshot(Path(os.environ.get("DJANGO_MCP_SCREENSHOTS") or tmp_path) / name)


def luminance(rgb: str) -> float:
    red, green, blue = (int(part) for part in rgb[rgb.index("(") + 1 : rgb.index(")")].split(",")[:3])
    return (0.2126 * red + 0.7152 * green + 0.0722 * blue) / 255


def until(check: Callable[[], Any], timeout: float = 15.0) -> Any:
    """``check()``'s first truthy answer, asked again as the page changes (the browser's own pace)."""
    deadline = time.monotonic() + timeout
    while not (answer := check()):
        assert time.monotonic() < deadline, "the page did not change as expected"
        time.sleep(0.1)
    return answer


@pytest.mark.django_db(transaction=True)
def test_the_monitor_reads_at_a_glance_light_and_dark(admin_url, browser, tmp_path):
    User.objects.create_superuser("admin", "a@example.com", "pw")
    now = timezone.now()
    for minutes in (50, 40, 30, 20, 12, 9, 5):
        make_task(tool="report", status="completed", created_at=now - timedelta(minutes=minutes + 2),
                  updated_at=now - timedelta(minutes=minutes), scope="mcp_tasks")  # fmt: skip
    for minutes in (15, 3):
        make_task(tool="fetch", status="failed", error={"code": -32603, "message": "upstream answered 502"},
                  created_at=now - timedelta(minutes=minutes + 1), updated_at=now - timedelta(minutes=minutes),
                  scope="mcp_tasks")  # fmt: skip
    make_task(tool="report", status="working", node="web-1", lease_expires_at=now + timedelta(seconds=10))
    stranded = make_task(tool="import", status="working", node="web-2", lease_expires_at=now - timedelta(minutes=1))
    admin_sign_in(browser, admin_url, MONITOR, "admin", "pw")
    page = browser.evaluate(MEASURE)
    assert page["title"].startswith("Task monitor"), page["title"]
    for said in ("Working", "upstream answered 502", "its process stopped renewing its lease", "web-2", "report"):
        assert said in page["text"], said
    assert str(stranded.pk)[:8] in page["text"]
    assert page["scrollWidth"] <= page["innerWidth"]  # nothing runs off the side at this width
    assert all(section["width"] > 250 for section in page["sections"]), page["sections"]
    assert page["bars"] >= 9  # a rectangle per finished minute, and the created outlines
    assert luminance(page["background"]) > 0.8
    keep(browser, tmp_path, f"monitor-{browser.width}.png")
    browser.call("Emulation.setEmulatedMedia", {"features": [{"name": "prefers-color-scheme", "value": "dark"}]})
    dark = browser.evaluate(MEASURE)
    assert luminance(dark["background"]) < 0.2  # the admin's dark mode
    keep(browser, tmp_path, f"monitor-dark-{browser.width}.png")


@pytest.fixture(scope="module")
def daphne(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    project = sqlite_project(tmp_path_factory.mktemp("monitor") / "db.sqlite3", "ada", "pw-for-ada")
    args = ["-m", "daphne", "-b", "127.0.0.1", "-p", "{port}", "tests.asgi:application"]
    with server_process(args, env=project) as base:
        yield base


@pytest.fixture
def chromium(tmp_path: Path) -> Iterator[Browser]:
    with opened_browser(tmp_path / "profile", width=1280, height=900) as browser:
        yield browser


def rpc(base: str, method: str, params: dict[str, Any]) -> dict[str, Any]:
    body = request_body(method, params, capabilities=EXT)
    return httpx.post(f"{base}/mcp-tasks/", content=json.dumps(body), headers=headers_for(body)).json()


def start_task(base: str, tool: str, arguments: dict[str, Any]) -> str:
    answer = rpc(base, "tools/call", {"name": tool, "arguments": arguments})
    assert answer["result"]["resultType"] == "task", answer
    return answer["result"]["taskId"]


LIVE_OPEN = "document.documentElement.dataset.mcpLive === 'open'"
"""The page's stream of task changes is open (changes made from now on reach it)."""

LIVE_ROW = """(() => {
  const row = document.querySelector('#monitor-live-rows tr[data-task="%s"]');
  return row && row.querySelector('.live-status').textContent;
})()"""


def test_a_task_shows_up_live_and_is_cancelled_from_its_page(daphne, chromium, tmp_path):
    admin_sign_in(chromium, daphne, MONITOR, "ada", "pw-for-ada")
    assert until(lambda: chromium.evaluate(MEASURE)["live"].startswith("Live")), chromium.evaluate(MEASURE)["live"]
    done = start_task(daphne, "quick", {"text": "seen live"})
    assert until(lambda: chromium.evaluate(LIVE_ROW % done) == "completed")  # no reload
    slow = start_task(daphne, "slow", {"seconds": 60})
    assert until(lambda: chromium.evaluate(LIVE_ROW % slow) == "working")
    # Its figures follow too: the page fetched them again once tasks changed.
    assert until(lambda: "Working" in chromium.evaluate(MEASURE)["text"])
    keep(chromium, tmp_path, "monitor-live.png")
    chromium.load(f"document.querySelector('#monitor-live-rows tr[data-task=\"{slow}\"] a').click()")
    status = "document.querySelector('.field-status_shown .readonly').innerText"
    assert chromium.evaluate(status) == "Working"
    assert until(lambda: chromium.evaluate(LIVE_OPEN))
    rpc(daphne, "tasks/cancel", {"taskId": slow})  # by its client, while the page is open
    assert until(lambda: chromium.evaluate(status) == "Cancelled")  # no reload
    other = start_task(daphne, "slow", {"seconds": 60})
    chromium.load("navigate", url=f"{daphne}/admin/django_mcp/task/{other}/change/")
    assert chromium.evaluate(status) == "Working"
    chromium.load("document.querySelector('.mcp-cancel-task button').click()")  # the page's own button
    assert until(lambda: chromium.evaluate(status) == "Cancelled")
    keep(chromium, tmp_path, "monitor-task-cancelled.png")


def test_the_task_list_follows_its_tasks(daphne, chromium):
    listed = start_task(daphne, "slow", {"seconds": 60})
    admin_sign_in(chromium, daphne, "/admin/django_mcp/task/", "ada", "pw-for-ada")
    row = f"document.querySelector('code[title=\"{listed}\"]').closest('tr')"
    cell = f"{row}.querySelector('.field-status_shown').innerText"
    assert chromium.evaluate(cell) == "Working"
    assert until(lambda: chromium.evaluate(LIVE_OPEN))
    rpc(daphne, "tasks/cancel", {"taskId": listed})
    assert until(lambda: chromium.evaluate(cell) == "Cancelled")  # no reload
    start_task(daphne, "quick", {})
    notice = "(n => n.hidden ? '' : n.innerText)(document.getElementById('mcp-live-notice'))"
    assert until(lambda: chromium.evaluate(notice)).startswith("1 new task(s)")
