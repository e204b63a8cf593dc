"""The task monitor, live: its stream of task changes over the channel layer, and who may open it."""

from __future__ import annotations

import asyncio
import json
from typing import Any
from unittest import mock

import pytest
from asgiref.sync import sync_to_async
from asgiref.testing import ApplicationCommunicator
from django.contrib.auth.models import Permission, User
from django.core.asgi import get_asgi_application

from django_mcp.shared_caches import shared_cache
from django_mcp.tasks.monitoring import VIEWERS_KEY, MonitorFeed, feed, monitor_fields
from django_mcp.testing import McpClient
from tests.task_rows import make_task
from tests.waiting import until

pytestmark = pytest.mark.django_db(transaction=True)

EVENTS = "/admin/django_mcp/taskmonitor/events/"


@pytest.fixture(autouse=True)
async def _close_the_monitors():
    yield
    await shared_cache("default").adelete(VIEWERS_KEY)
    feed.reset()


async def staff_cookie(async_client, *codenames: str) -> str:
    def make() -> User:
        user = User.objects.create_user("watcher", "w@example.com", "pw", is_staff=True)
        user.user_permissions.add(*Permission.objects.filter(codename__in=codenames))
        return user

    await async_client.aforce_login(await sync_to_async(make)())
    return f"sessionid={async_client.cookies['sessionid'].value}"


class EventStream:
    """The monitor's stream driven through the ASGI application, as daphne drives it."""

    def __init__(self, cookie: str) -> None:
        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": "GET",
            "scheme": "http",
            "path": EVENTS,
            "raw_path": EVENTS.encode(),
            "query_string": b"",
            "root_path": "",
            "headers": [(b"host", b"testserver"), (b"cookie", cookie.encode()), (b"accept", b"text/event-stream")],
            "client": ("127.0.0.1", 5000),
            "server": ("127.0.0.1", 80),
        }
        self.communicator = ApplicationCommunicator(get_asgi_application(), scope)
        self.buffer = ""

    async def start(self) -> dict[str, Any]:
        await self.communicator.send_input({"type": "http.request", "body": b""})
        return await self.communicator.receive_output(timeout=5)

    async def block(self, timeout: float = 5.0) -> str:
        while "\n\n" not in self.buffer:
            message = await asyncio.wait_for(self.communicator.output_queue.get(), timeout)
            self.buffer += message.get("body", b"").decode()
        block, self.buffer = self.buffer.split("\n\n", 1)
        return block

    async def ready(self) -> None:
        """Until the stream is in the monitors' group and has marked a monitor open (its first line)."""
        assert (await self.block()).startswith("retry: ")

    async def event(self, timeout: float = 5.0) -> dict[str, Any]:
        """The next ``data:`` event (comments skipped)."""
        while not (block := await self.block(timeout)).startswith("data: "):
            pass
        return json.loads(block[6:])

    async def close(self) -> None:
        await self.communicator.send_input({"type": "http.disconnect"})
        await self.communicator.wait(timeout=5)


async def test_the_stream_is_for_staff_who_may_view_tasks(async_client):
    assert (await async_client.get(EVENTS)).status_code == 403
    cookie = await staff_cookie(async_client)  # staff, without the permission
    refused = EventStream(cookie)
    assert (await refused.start())["status"] == 403
    await refused.communicator.wait(timeout=5)


async def test_a_wsgi_served_monitor_is_not_live(async_client, client, django_user_model):
    await staff_cookie(async_client, "view_task")
    user = await django_user_model.objects.aget(username="watcher")
    await sync_to_async(client.force_login)(user)
    assert (await sync_to_async(client.get)(EVENTS)).status_code == 204  # EventSource stops trying


async def test_without_a_channel_layer_the_monitor_is_not_live(async_client, settings):
    settings.CHANNEL_LAYERS = {}
    stream = EventStream(await staff_cookie(async_client, "view_task"))
    assert (await stream.start())["status"] == 204  # EventSource stops trying
    await stream.communicator.wait(timeout=5)


async def test_a_task_created_over_mcp_shows_up_and_moves_to_completed(async_client):
    stream = EventStream(await staff_cookie(async_client, "view_task"))
    start = await stream.start()
    assert start["status"] == 200
    assert dict(start["headers"])[b"Content-Type"] == b"text/event-stream"
    await stream.ready()
    mcp = McpClient("/mcp-tasks", client=async_client, capabilities={"elicitation": {}})
    task_id = (await mcp.astart_task("quick", {"text": "live"}))["taskId"]
    seen: list[dict[str, Any]] = []
    while not any(t["taskId"] == task_id and t["status"] == "completed" for t in seen):
        seen += (await stream.event())["tasks"]
    mine = [t for t in seen if t["taskId"] == task_id]
    assert {"tool": "quick", "server": "mcp_tasks", "created": True}.items() <= mine[0].items()  # every field loaded
    await stream.close()


async def test_a_change_is_sent_only_while_a_monitor_is_open():
    feed = MonitorFeed()
    task = await sync_to_async(make_task)()
    sent = []

    async def record(*args: Any) -> None:
        sent.append(args)

    with mock.patch("django_mcp.tasks.monitoring.abroadcast", record):
        await feed.aoffer(task, set())
        feed.opened(float("inf"))
        await feed.aoffer(task, set())
        await feed.aoffer(task, set())  # the same task again: one entry, the latest
        while not sent:
            await asyncio.sleep(0.05)  # the batch goes out within BATCH_SECONDS
    [(group, changes)] = sent
    assert group == "django_mcp.monitor" and json.loads(changes["params"]["data"]) == {
        "tasks": [monitor_fields(task, set())]
    }


def test_a_change_told_late_does_not_undo_a_later_one():
    from django_mcp.tasks.monitoring import _merged

    created = {"taskId": "t", "status": "working", "tool": "quick", "lastUpdatedAt": "2026-12-07T10:00:00.000Z"}
    finished = {"taskId": "t", "status": "completed", "lastUpdatedAt": "2026-12-07T10:00:00.020Z"}
    assert _merged(finished, created) == {**created, **finished}  # the creation told after the finish
    assert _merged(created, finished) == {**created, **finished}
    assert _merged({}, {"taskId": "t", "status": "working"}) == {"taskId": "t", "status": "working"}


async def test_a_change_is_described_from_the_loaded_fields_only():
    task = await sync_to_async(make_task)(status_message="half way", scope="a")
    assert monitor_fields(task, {"status_message", "scope", "tool", "node", "updated_at"}) == {
        "taskId": str(task.id),
        "status": "working",
    }
    full = monitor_fields(task, set())
    assert full["statusMessage"] == "half way" and full["server"] == "a" and full["tool"] == "slow"


async def test_a_change_made_while_the_mark_is_read_is_told_too():
    """Another process's monitor: a body that ends while its creation reads the mark is told as well."""
    feed = MonitorFeed()
    created, finished = await sync_to_async(make_task)(), await sync_to_async(make_task)()
    release = asyncio.Event()
    sent: list[Any] = []

    class SlowCache:
        async def aget(self, key: str) -> float:
            await release.wait()
            return float("inf")  # a monitor in another process is open

    async def record(*args: Any) -> None:
        sent.append(args)

    with (
        mock.patch("django_mcp.tasks.monitoring.shared_cache", lambda alias: SlowCache()),
        mock.patch("django_mcp.tasks.monitoring.abroadcast", record),
    ):
        creation = asyncio.create_task(feed.aoffer(created, set(), created=True))
        await asyncio.sleep(0)  # the creation reads the mark
        ending = asyncio.create_task(feed.aoffer(finished, set()))
        await asyncio.sleep(0)
        release.set()
        await asyncio.gather(creation, ending)
        await until(lambda: sent, 5, "the batch")
    [(_, changes)] = sent
    told = json.loads(changes["params"]["data"])["tasks"]
    assert {task["taskId"] for task in told} == {str(created.id), str(finished.id)}
