"""notifications/tasks on subscriptions/listen: acknowledgement, snapshot, pushes, binding."""

from __future__ import annotations

import asyncio
import json
from typing import Any
from unittest import mock

import pytest
from asgiref.sync import sync_to_async

from tests.listen_streams import Stream
from tests.task_calls import CLIENT, EXT, create, get, rpc, wait_for
from tests.task_servers import tasks_server
from tests.wire import assert_wire, post, request_body

pytestmark = pytest.mark.django_db(transaction=True)
SUB = "io.modelcontextprotocol/subscriptionId"
PLUGIN = tasks_server.extension_plugins[0]
TASKS_SCHEMA = "tasks-2026-07-28.schema.json"


async def listen(task_ids, *, caps=CLIENT, headers=None, sub="tl"):
    body = request_body("subscriptions/listen", {"notifications": {"taskIds": task_ids}}, id=sub, capabilities=caps)
    return await Stream.open(body, "/mcp-tasks/", headers)


def as_get(result):
    """What tasks/get answered, minus the result envelope: a notification carries exactly the rest."""
    return {k: v for k, v in result.items() if k not in ("resultType", "_meta")}


async def test_ack_snapshot_then_every_change_until_terminal(async_client):
    task_id = (await create(async_client, "slow", {"seconds": 0.6, "steps": 2}))["taskId"]
    stream = await listen([task_id, "not-a-task"])
    ack = await stream.frame()
    assert ack["params"]["notifications"] == {"taskIds": [task_id]}
    snapshot = await stream.frame()
    assert_wire(snapshot, "TaskStatusNotification", TASKS_SCHEMA)
    assert snapshot["method"] == "notifications/tasks"
    assert snapshot["params"]["_meta"] == {SUB: "tl"}
    assert snapshot["params"]["taskId"] == task_id
    frames = [snapshot]
    while frames[-1]["params"]["status"] != "completed":
        frames.append(await stream.frame(timeout=5))
    messages = [f["params"].get("statusMessage") for f in frames]
    assert "Step 1/2" in messages and "Step 2/2" in messages
    final = frames[-1]["params"]
    now = (await get(async_client, task_id))["result"]
    assert {k: v for k, v in final.items() if k != "_meta"} == as_get(now)
    assert final["result"]["content"][0]["text"] == "slept"
    await stream.close()


async def test_input_required_and_cancelled_are_pushed(async_client):
    task_id = (await create(async_client, "two_keys"))["taskId"]
    await wait_for(async_client, task_id, "input_required")
    stream = await listen([task_id])
    await stream.frame()
    parked = await stream.frame()
    assert parked["params"]["status"] == "input_required"
    assert set(parked["params"]["inputRequests"]) == {"a", "b"}
    await rpc(async_client, "tasks/update", {"taskId": task_id, "inputResponses": {"a": {"action": "accept"}}})
    partial = await stream.frame()
    assert set(partial["params"]["inputRequests"]) == {"b"}
    await rpc(async_client, "tasks/cancel", {"taskId": task_id})
    while (frame := await stream.frame(timeout=5))["params"]["status"] != "cancelled":
        pass
    assert frame["params"]["taskId"] == task_id
    await stream.close()


async def test_task_ids_need_the_extension_on_the_listen_request(async_client):
    body = request_body("subscriptions/listen", {"notifications": {"taskIds": ["x"]}}, capabilities={})
    response = await post(async_client, body, path="/mcp-tasks/")
    assert response.status_code == 400
    error = json.loads(response.content)["error"]
    assert error["code"] == -32021
    assert error["data"] == {"requiredCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}}


async def test_task_ids_must_be_a_list_of_strings(async_client):
    body = request_body("subscriptions/listen", {"notifications": {"taskIds": "abc"}}, capabilities=EXT)
    response = await post(async_client, body, path="/mcp-tasks/")
    assert json.loads(response.content)["error"]["code"] == -32602


async def test_only_tasks_the_caller_may_see_are_watched(async_client):
    task_id = (await create(async_client, "slow", headers={"X-Tenant": "acme"}))["taskId"]
    stream = await listen([task_id], headers={"X-Tenant": "globex"})
    ack = await stream.frame()
    assert ack["params"]["notifications"] == {"taskIds": []}
    await rpc(async_client, "tasks/cancel", {"taskId": task_id}, headers={"X-Tenant": "acme"})
    with pytest.raises(TimeoutError):  # nothing about someone else's task reaches this stream
        await stream.frame(timeout=0.5)
    await stream.close()


async def test_disabled_plugin_ignores_task_ids(async_client):
    stream = await listen(["x"], headers={"X-Tasks": "off"})
    ack = await stream.frame()
    assert "taskIds" not in ack["params"]["notifications"]
    await stream.close()


async def test_a_stale_state_arriving_after_the_terminal_one_is_dropped(async_client, settings):
    """Another worker's earlier anotify_changed may reach this worker's streams after the task's end: not shown."""
    from channels.layers import get_channel_layer

    from django_mcp.server.notify import MESSAGE_TYPE
    from django_mcp.tasks.notify import task_group

    settings.DJANGO_MCP = {**settings.DJANGO_MCP, "LISTEN_FANOUT": "process"}
    task_id = (await create(async_client, "two_keys"))["taskId"]
    await wait_for(async_client, task_id, "input_required")
    stream = await listen([task_id])
    await stream.frame()
    assert (await stream.frame())["params"]["status"] == "input_required"
    await rpc(async_client, "tasks/cancel", {"taskId": task_id})
    while (frame := await stream.frame(timeout=5))["params"]["status"] != "cancelled":
        pass
    working = {**frame["params"], "status": "working"}
    working.pop("_meta", None)
    stale = {"jsonrpc": "2.0", "method": "notifications/tasks", "params": working}
    await get_channel_layer().group_send(
        task_group(task_id), {"type": MESSAGE_TYPE, "message": stale, "group": task_group(task_id)}
    )
    with pytest.raises(TimeoutError):  # neither the stale state nor a second copy of the cancellation
        await stream.frame(timeout=0.5)
    await stream.close()


# -- publishing only what someone listens to ---------------------------------------------------


class _Published:
    """Records every ``group_send`` of the layer (then sends it), or holds them until released."""

    def __init__(self, hold: bool = False) -> None:
        from channels.layers import get_channel_layer

        self.layer = get_channel_layer()
        self.real_send = self.layer.group_send
        self.groups: list[str] = []
        self.reached, self.release = asyncio.Event(), asyncio.Event()
        if not hold:
            self.release.set()

    async def group_send(self, group: str, message: dict[str, Any]) -> None:
        self.groups.append(group)
        self.reached.set()
        await self.release.wait()
        await self.real_send(group, message)


async def _supervisor_done(task_id: str) -> None:
    supervisor = PLUGIN.runner._supervisors.get(task_id)
    if supervisor is not None:
        await asyncio.wait_for(asyncio.shield(supervisor), 5)


async def test_a_task_nobody_listens_to_is_never_published(async_client):
    from django_mcp.tasks.models import Task
    from django_mcp.tasks.notify import task_group

    published = _Published()
    with mock.patch.object(published.layer, "group_send", published.group_send):
        task_id = (await create(async_client, "two_keys"))["taskId"]
        await wait_for(async_client, task_id, "input_required")
        await rpc(async_client, "tasks/cancel", {"taskId": task_id})
        await wait_for(async_client, task_id, "cancelled")
        await _supervisor_done(task_id)  # its final anotify_changed (or not) happens within the patch
    assert task_group(task_id) not in published.groups
    assert not (await Task.objects.aget(pk=task_id)).watched


async def test_listening_marks_the_task_and_from_then_on_its_changes_are_published(async_client):
    from django_mcp.tasks.models import Task
    from django_mcp.tasks.notify import task_group

    published = _Published()
    with mock.patch.object(published.layer, "group_send", published.group_send):
        task_id = (await create(async_client, "two_keys"))["taskId"]
        await wait_for(async_client, task_id, "input_required")
        assert published.groups == []  # input_required reached nobody: nobody listened yet
        stream = await listen([task_id])
        await stream.frame()
        assert (await stream.frame())["params"]["status"] == "input_required"  # the snapshot has it
        assert (await Task.objects.aget(pk=task_id)).watched
        await rpc(async_client, "tasks/cancel", {"taskId": task_id})
        while (await stream.frame(timeout=5))["params"]["status"] != "cancelled":
            pass
        await stream.close()
    assert task_group(task_id) in published.groups


async def test_a_change_after_the_mark_is_published_one_before_it_is_in_the_snapshot():
    """The mark orders every change: made before it, the snapshot has it; made after it, its row says notify."""
    from django_mcp.tasks.models import Task, TaskStatus
    from django_mcp.tasks.store import operations

    owner = "sha256:watcher"
    common = {
        "tool": "t", "owner": owner, "scope": "s", "arguments": {}, "status_message": "", "ttl_ms": None,
        "poll_interval_ms": 100, "max_tasks": 100, "max_tasks_per_owner": None, "node": "n", "lease_seconds": 30,
    }  # fmt: skip
    before = await sync_to_async(operations.create)(**common)
    after = await sync_to_async(operations.create)(**common)
    done_before = await sync_to_async(operations.finish)(before.pk, TaskStatus.COMPLETED, result={"content": []})
    assert done_before is not None and not done_before.watched  # nobody to tell
    watched = await sync_to_async(operations.watch_many)([str(before.pk), str(after.pk)], owner)
    assert [(t.pk, t.status, t.watched) for t in watched] == [
        (before.pk, TaskStatus.COMPLETED, True),  # what the snapshot reads: the change made before the mark
        (after.pk, TaskStatus.WORKING, True),
    ]
    done_after = await sync_to_async(operations.finish)(after.pk, TaskStatus.COMPLETED, result={"content": []})
    assert done_after is not None and done_after.watched  # the row the change returns says: anotify_changed
    assert await sync_to_async(operations.watch_many)([str(after.pk)], "sha256:someone-else") == []
    assert await Task.objects.filter(watched=True).acount() == 2


async def test_a_row_loaded_without_the_mark_is_published():
    """A task read narrowly (``watched`` deferred) cannot say nobody listens: published, never loaded in passing."""
    from django_mcp.tasks.models import Task
    from django_mcp.tasks.notify import anotify_changed, task_group
    from django_mcp.tasks.store import operations
    from django_mcp.tasks.wire import DETAILED_FIELDS

    task = await sync_to_async(operations.create)(
        tool="t", owner="o", scope="s", arguments={}, status_message="", ttl_ms=None, poll_interval_ms=100,
        max_tasks=100, max_tasks_per_owner=None, node="n", lease_seconds=30,
    )  # fmt: skip
    narrow = await Task.objects.only(*DETAILED_FIELDS).aget(pk=task.pk)
    published = _Published()
    with mock.patch.object(published.layer, "group_send", published.group_send):
        await anotify_changed(narrow)  # an access to the deferred field here would raise SynchronousOnlyOperation
        await anotify_changed(task)  # loaded whole: not watched, skipped
    assert published.groups == [task_group(str(task.pk))]


async def test_a_finished_task_no_longer_runs_here_while_it_is_being_published(async_client):
    """Its lease is not renewed (nor control delivered) once its outcome is stored, however slow the layer is."""
    from django_mcp.tasks.models import Task

    task_id = (await create(async_client, "two_keys"))["taskId"]
    await wait_for(async_client, task_id, "input_required")
    await Task.objects.filter(pk=task_id).aupdate(watched=True)
    runner = PLUGIN.runner
    assert runner.running_here(task_id)
    published = _Published(hold=True)
    with mock.patch.object(published.layer, "group_send", published.group_send):
        try:
            await rpc(async_client, "tasks/cancel", {"taskId": task_id})
            await wait_for(async_client, task_id, "cancelled")
            await asyncio.wait_for(published.reached.wait(), 5)
            deadline = asyncio.get_running_loop().time() + 5
            while runner.running_here(task_id):
                assert asyncio.get_running_loop().time() < deadline
                await asyncio.sleep(0.01)
        finally:
            published.release.set()


async def _finish_elsewhere(task_id: str) -> None:
    """What another process does when the task ends: the compare-and-set, then its anotify_changed."""
    from django_mcp.tasks.notify import anotify_changed

    done = await PLUGIN.store.afinish(task_id, "cancelled", message="Cancelled elsewhere")
    assert done is not None
    await anotify_changed(done)


@pytest.mark.parametrize("when", ["after the mark", "after the snapshot"])
async def test_a_task_ending_while_a_stream_subscribes_reaches_it(async_client, when):
    """Ended between the mark and the snapshot: the snapshot has it. Ended after the snapshot: it is pushed."""
    task_id = (await create(async_client, "slow", {"seconds": 30}))["taskId"]
    door = "awatch_many" if when == "after the mark" else "avisible_many"  # the snapshot reads with avisible_many
    real = getattr(PLUGIN.store, door)

    async def then_finish(*args: Any) -> Any:
        read = await real(*args)
        await _finish_elsewhere(task_id)
        return read

    with mock.patch.object(PLUGIN.store, door, then_finish):
        stream = await listen([task_id])
        await stream.frame()  # the acknowledgement
        statuses = [(await stream.frame(timeout=5))["params"]["status"]]
        while statuses[-1] != "cancelled":
            statuses.append((await stream.frame(timeout=5))["params"]["status"])
    assert statuses == (["cancelled"] if when == "after the mark" else ["working", "cancelled"])
    await stream.close()
