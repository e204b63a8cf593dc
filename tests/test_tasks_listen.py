"""notifications/tasks on subscriptions/listen: acknowledgement, snapshot, pushes, binding."""

from __future__ import annotations

import json

import pytest

from tests.task_servers import stop_all_tasks
from tests.test_listen import Stream
from tests.test_tasks import CLIENT, EXT, create, get, rpc, wait_for
from tests.wire import assert_wire, post, request_body

pytestmark = pytest.mark.django_db(transaction=True)
SUB = "io.modelcontextprotocol/subscriptionId"
TASKS_SCHEMA = "tasks-2026-07-28.schema.json"


@pytest.fixture(autouse=True)
async def _stop_tasks():
    yield
    await stop_all_tasks()


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
    """Another worker's earlier publish may reach this worker's streams after the task's end: not shown."""
    from channels.layers import get_channel_layer

    from django_mcp.server.notify import MESSAGE_TYPE
    from django_mcp.tasks.runner import task_group

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
