"""The tasks admin in a real headless browser (Debian's chromium) at 1400 x 900: log in, list tasks, measure.

Chromium is driven over the DevTools protocol on a pipe (``--remote-debugging-pipe``: no port, no websocket
client) against Django's live server thread on the test database, with the admin's own CSS served. The
assertions are on the rendered page (layout boxes, rendered text, computed styles) and a screenshot is
taken; set DJANGO_MCP_SCREENSHOTS to a directory to keep it. Skipped where chromium is not installed:
``.ci/run`` installs it (``apt-get install chromium``).
"""

from __future__ import annotations

import datetime
import json
import os
import re
import struct
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from django.conf import settings
from django.contrib.auth.models import User

from django_mcp.models import Task
from tests.chromium import CHROMIUM, HEIGHT, Browser, admin_sign_in

pytestmark = [
    pytest.mark.live,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(CHROMIUM is None, reason="needs chromium (Debian: apt-get install chromium; .ci/run does)"),
    pytest.mark.timeout(120),
]


CREATED = datetime.datetime(2026, 12, 3, 12, 41, 7, tzinfo=datetime.UTC)
LONG_MESSAGE = (
    "Waiting for the quarterly figures from accounting before the summary can be written; "
    "this may take a while, the spreadsheet is large"
)


def local(moment: datetime.datetime) -> str:
    return moment.astimezone(ZoneInfo(settings.TIME_ZONE)).strftime("%Y-%m-%d %H:%M:%S")


MEASURE = """(() => {
  const lines = el => el ? el.getClientRects().length : 0;
  const cell = (row, name) => row.querySelector('.field-' + name);
  const table = document.querySelector('#result_list');
  const results = document.querySelector('.results');
  return {
    path: location.pathname,
    headerBackground: getComputedStyle(document.querySelector('#header')).backgroundColor,
    innerWidth: innerWidth,
    scrollWidth: document.documentElement.scrollWidth,
    tableRight: table.getBoundingClientRect().right,
    resultsRight: results.getBoundingClientRect().right,
    resultsOverflow: results.scrollWidth - results.clientWidth,
    columns: [...table.querySelectorAll('thead th')].map(th => Math.round(th.getBoundingClientRect().width)),
    content: Math.round(document.querySelector('.changelist-form-container').getBoundingClientRect().width),
    rows: [...table.querySelectorAll('tbody tr')].map(row => {
      const id = cell(row, 'task_id').querySelector('code');
      const lineHeight = id.getBoundingClientRect().height;
      const who = cell(row, 'who').firstElementChild;
      const message = cell(row, 'message').querySelector('span span');
      const marker = row.querySelector('.mcp-expired');
      return {
        height: row.getBoundingClientRect().height, lineHeight,
        id: id.innerText, idLines: lines(id), idTitle: id.title,
        tool: cell(row, 'tool_shown').innerText,
        status: cell(row, 'status_shown').innerText,
        who: who.innerText, whoLines: lines(who), whoHref: who.getAttribute('href'),
        message: message && {
          lines: Math.round(message.getBoundingClientRect().height / lineHeight),
          clipped: message.scrollWidth > message.clientWidth,
          title: message.parentElement.title,
        },
        times: ['created', 'updated', 'expires'].map(name => {
          const t = cell(row, name).querySelector('time');
          return t ? {text: t.innerText, lines: lines(t), title: t.title} : cell(row, name).innerText;
        }),
        expired: marker && {text: marker.innerText, shown: marker.offsetWidth > 0 && marker.offsetHeight > 0,
                            color: getComputedStyle(marker).color},
      };
    }),
  };
})()"""


def sign_in(browser: Browser, admin_url: str, then: str) -> None:
    admin_sign_in(browser, admin_url, then, "admin", "pw")


def png_size(png: bytes) -> tuple[int, int]:
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and png[12:16] == b"IHDR"
    return struct.unpack(">II", png[16:24])


def test_task_list_renders_whose_what_when_on_a_laptop_screen(admin_url, browser, tmp_path):
    User.objects.create_superuser("admin", "admin@example.com", "pw")
    ada = User.objects.create_user("ada", "ada@example.com", "pw", first_name="Ada", last_name="Lovelace")
    now = datetime.datetime.now(datetime.UTC)
    base = {"poll_interval_ms": 500, "node": "web-1"}
    ada_task = Task.objects.create(
        tool="quarterly_report",
        owner="sha256:" + "1" * 64,
        user=ada,
        owner_kind="user",
        status="input_required",
        status_message=LONG_MESSAGE,
        created_at=CREATED,
        updated_at=CREATED + datetime.timedelta(seconds=83),
        expires_at=now + datetime.timedelta(hours=2),
        **base,
    )
    expired = Task.objects.create(
        tool="export",
        owner="sha256:" + "2" * 64,
        owner_kind="anonymous",
        status="completed",
        status_message="Done",
        created_at=CREATED - datetime.timedelta(hours=3),
        updated_at=CREATED - datetime.timedelta(hours=3),
        expires_at=now - datetime.timedelta(minutes=5),
        **base,
    )
    principal = Task.objects.create(
        tool="slow",
        owner="sha256:3c0ffee3" + "3" * 56,
        owner_kind="principal",
        status_message="Step 2/3",
        created_at=CREATED - datetime.timedelta(minutes=1),
        updated_at=CREATED + datetime.timedelta(seconds=5),
        **base,
    )
    tasks = [ada_task, expired, principal]

    sign_in(browser, admin_url, "/admin/django_mcp/task/")
    page = browser.evaluate(MEASURE)
    shot = browser.screenshot(
        Path(os.environ.get("DJANGO_MCP_SCREENSHOTS") or tmp_path) / f"admin-task-list-{browser.width}.png"
    )

    assert page["path"] == "/admin/django_mcp/task/"
    assert page["headerBackground"] not in ("rgba(0, 0, 0, 0)", "transparent")  # the admin CSS is applied
    assert png_size(shot) == (browser.width, HEIGHT) and len(shot) > 20_000
    # Nothing pushed off a 1280 or 1400 px screen.
    assert page["innerWidth"] == browser.width
    layout = json.dumps({k: page[k] for k in ("columns", "content", "resultsOverflow")})
    assert page["scrollWidth"] <= browser.width, layout
    assert page["resultsOverflow"] == 0 and page["tableRight"] <= page["resultsRight"], layout
    rows = {row["id"]: row for row in page["rows"]}
    assert set(rows) == {t.id.hex[:8] for t in tasks}
    for task in tasks:
        row = rows[task.id.hex[:8]]
        # Every row is one line high: its id, who and times do not wrap.
        assert row["idLines"] == 1 and row["idTitle"] == str(task.id)
        assert row["height"] < 2 * row["lineHeight"] + 20, row
        assert row["whoLines"] == 1
        assert row["times"][0]["text"] == local(task.created_at) and row["times"][0]["lines"] == 1
        assert row["times"][1]["text"] == local(task.updated_at) and row["times"][1]["lines"] == 1
    heights = [row["height"] for row in page["rows"]]
    assert max(heights) - min(heights) <= 1

    row = rows[ada_task.id.hex[:8]]
    assert (row["tool"], row["status"], row["who"]) == ("quarterly_report", "Input Required", "ada")
    assert row["whoHref"] == f"/admin/auth/user/{ada.pk}/change/"
    assert row["times"][1]["text"] == local(CREATED + datetime.timedelta(seconds=83))  # to the second
    assert row["message"] == {"lines": 1, "clipped": True, "title": LONG_MESSAGE}  # cut, on one line
    assert re.fullmatch(r"in 1 h 5\d min|in 2 h 0 min", row["times"][2]["text"])
    assert row["times"][2]["title"] == local(ada_task.expires_at)
    assert row["expired"] is None

    row = rows[expired.id.hex[:8]]
    assert row["who"] == "anonymous"
    assert row["status"] == "Completed expired"
    assert row["expired"] == {"text": "expired", "shown": True, "color": "rgb(186, 33, 33)"}
    assert re.fullmatch(r"[5-6] min ago", row["times"][2]["text"])
    assert row["times"][2]["lines"] == 1 and row["times"][2]["title"] == local(expired.expires_at)

    row = rows[principal.id.hex[:8]]
    assert row["who"] == "token principal"
    assert row["whoHref"] is None
    assert row["times"][2] == "never"  # no ttlMs

    # The detail page: the full id, times to the second, and what each field means under it.
    browser.load("navigate", url=f"{admin_url}/admin/django_mcp/task/{ada_task.pk}/change/")
    detail = browser.evaluate(DETAIL)
    browser.screenshot(Path(os.environ.get("DJANGO_MCP_SCREENSHOTS") or tmp_path) / "admin-task-detail.png")
    assert str(ada_task.id) in detail["id"]
    assert detail["created"] == local(CREATED) and detail["updated"] == local(ada_task.updated_at)
    assert detail["who"] == "ada"
    assert detail["help"]["status_message"] == str(Task._meta.get_field("status_message").help_text)
    assert detail["help"]["who"] == str(Task._meta.get_field("user").help_text)
    assert detail["help"]["owner"] == str(Task._meta.get_field("owner").help_text)
    # A running task's page has the cancel button among the object tools, in the admin's delete colour.
    assert detail["cancel"]["text"].lower() == "cancel task" and detail["cancel"]["shown"]
    assert detail["cancel"]["background"] == "rgb(186, 33, 33)" and detail["cancel"]["top"] < HEIGHT
    browser.load("document.querySelector('.mcp-cancel-task button').click()")
    after = browser.evaluate(DETAIL)
    browser.screenshot(Path(os.environ.get("DJANGO_MCP_SCREENSHOTS") or tmp_path) / "admin-task-cancelled.png")
    assert after["messages"] == ["Requested cancellation of the task."]
    ada_task.refresh_from_db()
    assert ada_task.cancel_requested is True  # web-1 runs it: the flag is what it picks up
    assert all(detail["help"].values()), detail["help"]
    assert detail["overflow"] <= 0


DETAIL = """(() => {
  const text = name => document.querySelector('.field-' + name + ' .readonly').innerText.trim();
  const help = {};
  for (const row of document.querySelectorAll('.form-row')) {
    const name = [...row.classList].find(c => c.startsWith('field-')).slice(6);
    const h = row.querySelector('.help');
    help[name] = h && h.offsetHeight > 0 ? h.innerText.trim() : '';
  }
  return {
    id: text('id'), created: text('created'), updated: text('updated'), who: text('who'), help,
    overflow: document.documentElement.scrollWidth - innerWidth,
    cancel: (b => b && {text: b.innerText, shown: b.offsetWidth > 0 && b.offsetHeight > 0,
                        background: getComputedStyle(b).backgroundColor,
                        top: Math.round(b.getBoundingClientRect().top)})(
      document.querySelector('.object-tools .mcp-cancel-task button')),
    messages: [...document.querySelectorAll('.messagelist li')].map(li => li.innerText.trim()),
  };
})()"""


TOOL_CALLS = """(() => {
  const table = document.querySelector('#result_list');
  const results = document.querySelector('.results');
  return {
    scrollWidth: document.documentElement.scrollWidth,
    resultsOverflow: results.scrollWidth - results.clientWidth,
    times: [...table.querySelectorAll('tbody .field-when time')].map(t => t.innerText),
    headers: [...table.querySelectorAll('thead th')].map(th => th.innerText.trim().toLowerCase()),
  };
})()"""


def test_tool_calls_list_shows_times_as_the_tasks_list_does(admin_url, browser, tmp_path):
    from django_mcp.audit import ToolCall

    User.objects.create_superuser("admin", "admin@example.com", "pw")
    for n, outcome in enumerate(["ok", "tool_error", "refused"]):
        ToolCall.objects.create(
            created_at=CREATED + datetime.timedelta(seconds=n),
            caller=f"user:someone-with-a-long-name-{n}@example.com",
            server="django_mcp",
            tool=f"quarterly_report_{n}",
            outcome=outcome,
            duration_ms=12.5,
        )
    sign_in(browser, admin_url, "/admin/django_mcp/toolcall/")
    page = browser.evaluate(TOOL_CALLS)
    browser.screenshot(
        Path(os.environ.get("DJANGO_MCP_SCREENSHOTS") or tmp_path) / f"admin-tool-calls-{browser.width}.png"
    )
    assert page["scrollWidth"] <= browser.width and page["resultsOverflow"] == 0, page
    assert page["headers"][1] == "when"
    assert sorted(page["times"]) == [local(CREATED + datetime.timedelta(seconds=n)) for n in range(3)]
