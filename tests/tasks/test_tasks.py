"""The tasks extension: creation, polling, outcomes, cancellation, input mid-flight, binding, retention."""

from __future__ import annotations

import asyncio
import json
import os
import re
import time
import uuid
from datetime import UTC, datetime, timedelta, timezone
from typing import Any
from zoneinfo import ZoneInfo

import pytest
import time_machine
from asgiref.sync import sync_to_async

from django_mcp.models import Task
from django_mcp.tasks import EXTENSION_ID, McpTasks, astart_task
from django_mcp.tasks.models import TaskQuota
from django_mcp.tasks.store.database import new_task_id
from django_mcp.tasks.wire import DETAILED_FIELDS, timestamp
from tests.task_calls import CLIENT, EXT, create, get, owner_key, rpc, wait_for
from tests.task_servers import EVENTS, small_server, stop_all_tasks, tasks_server
from tests.wire import assert_wire, post, post_from, request_body

pytestmark = pytest.mark.django_db(transaction=True)

TASKS_SCHEMA = "tasks-2026-07-28.schema.json"
ISO = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$")
TASK_FIELDS = {"taskId", "status", "statusMessage", "createdAt", "lastUpdatedAt", "ttlMs", "pollIntervalMs"}


@pytest.fixture(autouse=True)
async def _stop_tasks():
    EVENTS.clear()
    yield
    await stop_all_tasks()


def error_of(body):
    assert "error" in body, body
    return body["error"]


# -- negotiation -------------------------------------------------------------------------


async def test_discover_advertises_the_extension_and_no_legacy_capability(async_client):
    caps = (await rpc(async_client, "server/discover"))["result"]["capabilities"]
    assert caps["extensions"] == {EXTENSION_ID: {}}
    assert "tasks" not in caps


async def test_non_declaring_request_gets_a_plain_result(async_client):
    result = await create(async_client, "quick", {"text": "x"}, caps={})
    assert result["resultType"] == "complete"
    assert result["content"] == [{"type": "text", "text": "sync:x"}]
    assert await Task.objects.acount() == 0


@pytest.mark.parametrize("method", ["tasks/get", "tasks/update", "tasks/cancel"])
async def test_tasks_methods_need_the_declaration_before_any_lookup(async_client, method):
    params = {"taskId": "gate-test", "inputResponses": {}}
    body = await rpc(async_client, method, params, caps={"sampling": {}}, status=400)
    assert error_of(body)["code"] == -32021
    assert error_of(body)["data"] == {"requiredCapabilities": {"extensions": {EXTENSION_ID: {}}}}


async def test_optional_tools_run_in_the_request_when_the_extension_is_disabled_for_it(async_client):
    headers = {"X-Tasks": "off"}
    for tool, text in (("declared_sync", "sync inline: x"), ("quick", "sync:x")):
        body = await rpc(async_client, "tools/call", {"name": tool, "arguments": {"text": "x"}}, headers=headers)
        assert body["result"]["content"] == [{"type": "text", "text": text}], body
    body = await rpc(async_client, "tools/call", {"name": "only_as_task"}, headers=headers, status=400)
    assert error_of(body)["code"] == -32021
    assert "a request for which the extension is enabled" in error_of(body)["message"]
    assert await Task.objects.acount() == 0


async def test_required_tool_refuses_a_non_declaring_client_before_its_handler_runs(async_client):
    body = await rpc(async_client, "tools/call", {"name": "only_as_task"}, caps={}, status=400)
    assert error_of(body)["code"] == -32021
    assert error_of(body)["data"]["requiredCapabilities"]["extensions"] == {EXTENSION_ID: {}}
    assert "only_as_task_ran" not in EVENTS


async def test_optional_and_forbidden_are_advertised(async_client):
    tools, cursor = [], None
    while True:
        page = (await rpc(async_client, "tools/list", {"cursor": cursor} if cursor else {}))["result"]
        tools += page["tools"]
        cursor = page.get("nextCursor")
        if cursor is None:
            break
    support = {t["name"]: t["execution"]["taskSupport"] for t in tools}
    assert (support["quick"], support["only_as_task"], support["plain"]) == ("optional", "required", "forbidden")


async def test_disabled_predicate_refuses_everything_tasks(async_client):
    off = {"X-Tasks": "off"}
    created = await create(async_client, "quick", caps=EXT)
    body = await rpc(async_client, "tasks/get", {"taskId": created["taskId"]}, headers=off, status=404)
    assert error_of(body)["code"] == -32601
    assert (await create(async_client, "quick", {"text": "y"}, headers=off))["content"][0]["text"] == "sync:y"
    inline = await create(async_client, "slow", {"seconds": 0.03}, headers=off)
    assert inline["content"][0]["text"] == "slept"  # no task here: the body ran in the request


async def test_start_task_without_the_plugin_runs_the_body_in_the_request():
    from django.test import RequestFactory

    from django_mcp import McpRequest
    from django_mcp.protocol.jsonrpc import RequestMeta

    meta = RequestMeta.model_validate(
        {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": EXT}
    )
    request = McpRequest(RequestFactory().post("/"), request_id=1, method="tools/call", params={"name": "x"}, meta=meta)

    async def run(task):
        await task.aupdate("inline")
        return f"ran inline, cancelled={task.cancelled}, id={task.id}"

    assert await astart_task(request, run=run) == "ran inline, cancelled=False, id=None"


# -- the handle and polling ----------------------------------------------------------------


def test_task_ids_are_uuid4_with_122_random_bits():
    ids = [new_task_id() for _ in range(2000)]
    assert {(i.version, i.variant) for i in ids} == {(4, uuid.RFC_4122)}
    assert len(set(ids)) == len(ids)
    # No time prefix: the leading 48 bits of ids made in the same millisecond differ.
    assert len({i.int >> 80 for i in ids}) > 1990


async def test_the_declarative_form_gives_the_handle_its_first_status_message(async_client):
    handle = await create(async_client, "declared_queued")
    assert (handle["status"], handle["statusMessage"]) == ("working", "Queued")
    assert (await get(async_client, handle["taskId"]))["result"]["statusMessage"] == "Queued"
    await rpc(async_client, "tasks/cancel", {"taskId": handle["taskId"]}, status=200)
    await wait_for(async_client, handle["taskId"], "cancelled")


async def test_handle_is_flat_and_committed_before_it_is_returned(async_client):
    handle = await create(async_client, "slow", {"seconds": 30})
    assert_wire(handle, "CreateTaskResult", TASKS_SCHEMA)
    assert handle["resultType"] == "task"
    assert uuid.UUID(handle["taskId"]).version == 4  # 122 random bits: the id may be all a caller has
    assert handle["status"] == "working"
    assert ISO.match(handle["createdAt"]) and ISO.match(handle["lastUpdatedAt"])
    assert (handle["ttlMs"], handle["pollIntervalMs"]) == (60_000, 250)
    assert set(handle) - {"_meta"} <= TASK_FIELDS | {"resultType"}
    for absent in ("result", "error", "inputRequests", "requestState", "cacheScope", "task", "ttl", "pollInterval"):
        assert absent not in handle
    row = await Task.objects.aget(pk=handle["taskId"])
    assert (row.status, row.tool) == ("working", "slow")
    assert row.owner == owner_key("mcp_tasks", "nobody")
    got = await get(async_client, handle["taskId"])
    assert got["result"]["taskId"] == handle["taskId"]
    assert got["result"]["resultType"] == "complete"


async def test_completed_task_inlines_its_result(async_client):
    handle = await create(async_client, "quick", {"text": "hi"})
    assert handle["statusMessage"] == "Queued"
    result = await wait_for(async_client, handle["taskId"], "completed")
    body = await get(async_client, handle["taskId"])
    assert_wire(body["result"], "GetTaskResult", TASKS_SCHEMA)
    assert result["result"]["content"] == [{"type": "text", "text": "task:hi"}]
    assert "io.modelcontextprotocol/related-task" not in result["result"].get("_meta", {})
    assert result["createdAt"] == handle["createdAt"]


async def test_a_body_run_as_a_task_keeps_only_the_caller_and_the_call_of_its_request(async_client, django_user_model):
    # It runs on after the response: no headers (credentials among them), no body, nothing else of a
    # request that is over; the same request a body gets on the worker fleet.
    user = await django_user_model.objects.acreate(username="ada")
    await async_client.aforce_login(user)
    handle = await create(async_client, "request_seen", {"note": "x"}, headers={"X-Secret": "s3cret"})
    result = await wait_for(async_client, handle["taskId"], "completed")
    seen = json.loads(result["result"]["content"][0]["text"])
    assert seen == {
        "task": True,
        "headers": {},
        "user": "ada",
        "params": {"name": "request_seen", "arguments": {"note": "x"}},
        "meta": [],
        "get": {},
        "version": "2026-07-28",
        "capabilities": sorted(CLIENT),
        "progress_token": None,
        "meta_object": seen["meta_object"],
        "read_only": True,
    }


async def test_bodies_whose_clients_declared_the_same_share_one_meta(async_client):
    # A running task holds its request's _meta for as long as it runs: equal ones are held once. The
    # progress token is the request's own (its response is gone), so it is not part of what is shared.
    seen = []
    for token, caps in (("p1", CLIENT), ("p2", CLIENT), ("p3", {**CLIENT, "sampling": {}})):
        handle = await create(async_client, "request_seen", caps=caps, progressToken=token)
        result = await wait_for(async_client, handle["taskId"], "completed")
        seen.append(json.loads(result["result"]["content"][0]["text"]))
    assert [s["progress_token"] for s in seen] == [None, None, None]
    assert seen[0]["meta_object"] == seen[1]["meta_object"] != seen[2]["meta_object"]
    assert seen[2]["capabilities"] == sorted({**CLIENT, "sampling": {}})


async def test_a_body_run_in_the_request_sees_the_whole_request(async_client):
    body = await rpc(async_client, "tools/call", {"name": "request_seen"}, caps={}, headers={"X-Secret": "s3cret"})
    seen = json.loads(body["result"]["content"][0]["text"])
    assert seen["task"] is False
    assert seen["headers"]["x-secret"] == "s3cret"
    assert "HTTP_X_SECRET" in seen["meta"]


async def test_status_message_updates_are_visible(async_client):
    handle = await create(async_client, "slow", {"seconds": 1.5, "steps": 3})  # 0.5 s per step: seen on a busy box
    seen = set()
    for _ in range(400):
        result = (await get(async_client, handle["taskId"]))["result"]
        seen.add(result.get("statusMessage"))
        if result["status"] == "completed":
            break
        await asyncio.sleep(0.02)
    assert {"Step 1/3", "Step 3/3"} <= seen
    assert result["result"]["content"][0]["text"] == "slept"


async def test_ordinary_exception_completes_with_is_error(async_client):
    handle = await create(async_client, "task_boom")
    result = await wait_for(async_client, handle["taskId"], "completed", "failed")
    assert result["status"] == "completed"
    assert result["result"]["isError"] is True
    assert "RuntimeError: kaput" in result["result"]["content"][0]["text"]


async def test_a_run_that_cannot_take_the_task_ends_the_task_as_a_raising_run_does(async_client):
    handle = await create(async_client, "run_without_task")
    result = await wait_for(async_client, handle["taskId"], "completed", "failed")
    assert result["status"] == "completed" and result["result"]["isError"] is True
    assert "TypeError" in result["result"]["content"][0]["text"]


async def test_json_rpc_error_fails_the_task_with_that_error(async_client):
    handle = await create(async_client, "task_rpc_error")
    result = await wait_for(async_client, handle["taskId"], "completed", "failed")
    assert result["status"] == "failed"
    assert result["error"] == {"code": -32042, "message": "Quota exceeded", "data": {"quota": 3}}
    assert "result" not in result
    assert result["statusMessage"] == "Quota exceeded"


async def test_invalid_structured_output_fails_the_task(async_client):
    handle = await create(async_client, "task_bad_output")
    result = await wait_for(async_client, handle["taskId"], "failed", "completed")
    assert result["status"] == "failed"
    assert result["error"]["code"] == -32603


async def test_no_progress_notifications_for_a_task(async_client):
    body = request_body("tools/call", {"name": "progress_then_task"}, capabilities=EXT, progressToken="p")
    response = await post(async_client, body, path="/mcp-tasks/")
    assert response["Content-Type"].startswith("application/json")
    handle = json.loads(response.content)["result"]
    assert (await wait_for(async_client, handle["taskId"], "completed"))["result"]["content"][0]["text"] == "ok"


async def test_unknown_task_is_32602(async_client):
    for task_id in ("tasks-conformance-nonexistent-12345", str(uuid.uuid4())):
        body = await rpc(async_client, "tasks/get", {"taskId": task_id}, status=400)
        assert error_of(body) == {"code": -32602, "message": f"Unknown task: {task_id}", "data": {"taskId": task_id}}


async def test_mcp_name_must_mirror_the_task_id(async_client):
    handle = await create(async_client, "slow")
    body = request_body("tasks/get", {"taskId": handle["taskId"]}, capabilities=EXT)
    response = await post(async_client, body, path="/mcp-tasks/", headers={"Mcp-Name": "another"})
    assert response.status_code == 400
    assert json.loads(response.content)["error"]["code"] == -32020


# -- cancellation -----------------------------------------------------------------------------


async def test_cancel_acks_empty_and_the_task_ends_cancelled(async_client):
    handle = await create(async_client, "slow", {"seconds": 30})
    ack = await rpc(async_client, "tasks/cancel", {"taskId": handle["taskId"]}, status=200)
    assert set(ack["result"]) == {"resultType", "_meta"}
    assert ack["result"]["resultType"] == "complete"
    result = await wait_for(async_client, handle["taskId"], "cancelled")
    assert "result" not in result and "error" not in result
    again = await rpc(async_client, "tasks/cancel", {"taskId": handle["taskId"]}, status=200)
    assert again["result"]["resultType"] == "complete"
    assert (await get(async_client, handle["taskId"]))["result"]["status"] == "cancelled"


async def test_a_run_that_ignores_its_signal_is_cancelled_at_its_next_await(async_client):
    handle = await create(async_client, "stubborn")
    for _ in range(100):
        if EVENTS.get("stubborn") == "running":
            break
        await asyncio.sleep(0.01)
    await rpc(async_client, "tasks/cancel", {"taskId": handle["taskId"]}, status=200)
    await wait_for(async_client, handle["taskId"], "cancelled")
    assert EVENTS["stubborn"] == "cancelled, signal=True"


async def test_a_running_task_is_its_supervisor_alone(async_client):
    # The body runs in the asyncio task that records its outcome: one task, not two, per running task.
    runner = tasks_server.extension_plugins[0].runner
    handle = await create(async_client, "where_it_runs")
    for _ in range(100):
        if handle["taskId"] in EVENTS:
            break
        await asyncio.sleep(0.01)
    assert EVENTS[handle["taskId"]] is runner._supervisors[handle["taskId"]]


async def test_a_cancelled_run_records_its_outcome_in_a_task_no_longer_being_cancelled(async_client, monkeypatch):
    # Each cancel sent to the run counts on its asyncio task; once the run is over they are taken back,
    # so the final write (and what it publishes) can use asyncio.timeout and task groups as usual.
    plugin = tasks_server.extension_plugins[0]
    finish, cancelling = plugin.store.afinish, []

    async def afinish(*args: Any, **kwargs: Any) -> Any:
        cancelling.append(asyncio.current_task().cancelling())
        return await finish(*args, **kwargs)

    monkeypatch.setattr(plugin.store, "afinish", afinish)
    handle = await create(async_client, "where_it_runs")
    for _ in range(100):
        if handle["taskId"] in EVENTS:
            break
        await asyncio.sleep(0.01)
    assert plugin.runner.act_here(handle["taskId"], "cancel")
    assert plugin.runner.act_here(handle["taskId"], "cancel")  # e.g. tasks/cancel, then the maintenance's flag
    await wait_for(async_client, handle["taskId"], "cancelled")
    assert cancelling == [0]


async def test_the_signal_event_is_set_by_a_cancel_before_or_after_it_is_first_asked_for():
    from django_mcp.tasks import TaskContext

    waited_on, asked_late = TaskContext(), TaskContext()
    waiter = asyncio.ensure_future(waited_on.signal.wait())
    await asyncio.sleep(0)
    assert not waiter.done() and not waited_on.cancelled
    waited_on.mark_cancelled()
    await asyncio.wait_for(waiter, 1)
    assert waited_on.cancelled and waited_on.signal.is_set()
    asked_late.mark_cancelled()  # no event made yet (most tasks never ask for one)
    assert asked_late.cancelled and asked_late.signal.is_set()


async def test_terminal_states_never_change(async_client):
    handle = await create(async_client, "quick")
    done = await wait_for(async_client, handle["taskId"], "completed")
    await rpc(async_client, "tasks/cancel", {"taskId": handle["taskId"]}, status=200)
    after = (await get(async_client, handle["taskId"]))["result"]
    assert after["status"] == "completed"
    assert after["lastUpdatedAt"] == done["lastUpdatedAt"]
    # The compare-and-set refuses to move a terminal task, whoever asks.
    from django_mcp.tasks.store import operations

    assert await sync_to_async(operations.finish)(handle["taskId"], "cancelled") is None
    assert (await Task.objects.aget(pk=handle["taskId"])).status == "completed"


async def test_cancel_unknown_task_is_32602(async_client):
    body = await rpc(async_client, "tasks/cancel", {"taskId": str(uuid.uuid4())}, status=400)
    assert error_of(body)["code"] == -32602


# -- input mid-flight --------------------------------------------------------------------------


async def test_input_round_trip_with_fresh_keys_for_a_second_ask(async_client):
    handle = await create(async_client, "asks_twice")
    task_id = handle["taskId"]
    parked = await wait_for(async_client, task_id, "input_required")
    assert_wire(parked, "InputRequiredTask", TASKS_SCHEMA)
    assert list(parked["inputRequests"]) == ["confirm"]
    assert parked["inputRequests"]["confirm"]["method"] == "elicitation/create"
    ack = await rpc(
        async_client,
        "tasks/update",
        {"taskId": task_id, "inputResponses": {"confirm": {"action": "accept", "content": {"ok": True}}}},
        status=200,
    )
    assert set(ack["result"]) == {"resultType", "_meta"}
    for _ in range(200):
        parked = (await get(async_client, task_id))["result"]
        if parked["status"] == "input_required" and "confirm.2" in parked["inputRequests"]:
            break
        await asyncio.sleep(0.02)
    assert list(parked["inputRequests"]) == ["confirm.2"]
    # An answer under the consumed key is ignored, not attributed to the new question.
    stale = {"confirm": {"action": "accept", "content": {"ok": "stale"}}}
    await rpc(async_client, "tasks/update", {"taskId": task_id, "inputResponses": stale}, status=200)
    assert (await get(async_client, task_id))["result"]["status"] == "input_required"
    fresh = {"confirm.2": {"action": "accept", "content": {"ok": False}}}
    await rpc(async_client, "tasks/update", {"taskId": task_id, "inputResponses": fresh}, status=200)
    done = await wait_for(async_client, task_id, "completed")
    assert done["result"]["content"][0]["text"] == "{'ok': True} then {'ok': False}"


async def test_partial_answers_keep_the_task_parked_on_the_rest(async_client):
    task_id = (await create(async_client, "two_keys"))["taskId"]
    parked = await wait_for(async_client, task_id, "input_required")
    assert set(parked["inputRequests"]) == {"a", "b"}
    await rpc(async_client, "tasks/update", {"taskId": task_id, "inputResponses": {"a": {"action": "accept"}}})
    still = (await get(async_client, task_id))["result"]
    assert still["status"] == "input_required"
    assert set(still["inputRequests"]) == {"b"}
    await rpc(async_client, "tasks/update", {"taskId": task_id, "inputResponses": {"b": {"action": "decline"}}})
    done = await wait_for(async_client, task_id, "completed")
    assert done["result"]["content"][0]["text"] == "a=accept b=decline"


async def test_update_ignores_unknown_keys_and_rejects_malformed_answers(async_client):
    task_id = (await create(async_client, "two_keys"))["taskId"]
    await wait_for(async_client, task_id, "input_required")
    ack = await rpc(
        async_client, "tasks/update", {"taskId": task_id, "inputResponses": {"zzz": {"action": "accept"}}}, status=200
    )
    assert ack["result"]["resultType"] == "complete"
    bad = await rpc(
        async_client, "tasks/update", {"taskId": task_id, "inputResponses": {"a": {"action": "maybe"}}}, status=400
    )
    assert error_of(bad)["code"] == -32602
    missing = await rpc(async_client, "tasks/update", {"taskId": task_id}, status=400)
    assert error_of(missing)["code"] == -32602
    assert set((await get(async_client, task_id))["result"]["inputRequests"]) == {"a", "b"}


async def test_update_of_a_terminal_task_is_acked(async_client):
    task_id = (await create(async_client, "quick"))["taskId"]
    await wait_for(async_client, task_id, "completed")
    ack = await rpc(async_client, "tasks/update", {"taskId": task_id, "inputResponses": {"x": {}}}, status=200)
    assert ack["result"]["resultType"] == "complete"


async def test_input_the_client_cannot_answer_fails_the_task(async_client):
    task_id = (await create(async_client, "asks_sampling"))["taskId"]
    result = await wait_for(async_client, task_id, "failed", "completed")
    assert result["status"] == "failed"
    assert result["error"]["code"] == -32021
    assert result["error"]["data"] == {"requiredCapabilities": {"sampling": {}}}


async def test_pending_input_is_persisted(async_client):
    task_id = (await create(async_client, "two_keys"))["taskId"]
    await wait_for(async_client, task_id, "input_required")
    await rpc(async_client, "tasks/update", {"taskId": task_id, "inputResponses": {"a": {"action": "accept"}}})
    row = await Task.objects.aget(pk=task_id)
    assert set(row.input_requests) == {"b"}
    assert row.input_keys == ["a", "b"]


# -- binding ----------------------------------------------------------------------------------------


async def test_another_binding_reads_exactly_like_an_unknown_task(async_client):
    task_id = (await create(async_client, "slow", headers={"X-Tenant": "acme"}))["taskId"]
    assert (await get(async_client, task_id, headers={"X-Tenant": "acme"}))["result"]["status"] == "working"
    for method, params in [
        ("tasks/get", {"taskId": task_id}),
        ("tasks/cancel", {"taskId": task_id}),
        ("tasks/update", {"taskId": task_id, "inputResponses": {}}),
    ]:
        body = await rpc(async_client, method, params, headers={"X-Tenant": "globex"}, status=400)
        assert error_of(body) == {"code": -32602, "message": f"Unknown task: {task_id}", "data": {"taskId": task_id}}
    # The foreign cancel did nothing.
    assert (await get(async_client, task_id, headers={"X-Tenant": "acme"}))["result"]["status"] == "working"


async def test_default_binding_is_the_authenticated_principal(async_client):
    alice, bob = {"Authorization": "Bearer alice-token"}, {"Authorization": "Bearer bob-token"}
    task_id = (await create(async_client, "slow", path="/mcp-principal/", headers=alice))["taskId"]
    ok = await get(async_client, task_id, path="/mcp-principal/", headers=alice)
    assert ok["result"]["taskId"] == task_id
    denied = await get(async_client, task_id, path="/mcp-principal/", headers=bob)
    assert error_of(denied)["code"] == -32602
    row = await Task.objects.aget(pk=task_id)
    assert row.owner == owner_key("mcp_p", "auth:str:alice")
    assert "alice" not in row.owner  # a principal may be a secret: only its digest is stored


# -- retention ----------------------------------------------------------------------------------------


async def test_cap_refuses_creation_without_evicting_anything(async_client):
    ids = [(await create(async_client, "slow", path="/mcp-small/"))["taskId"] for _ in range(3)]
    body = await rpc(async_client, "tools/call", {"name": "slow"}, path="/mcp-small/", status=200)
    assert error_of(body)["code"] == -32603
    assert error_of(body)["data"] == {"maxTasks": 3}
    assert "at most 3" in error_of(body)["message"]
    for task_id in ids:
        assert (await get(async_client, task_id, path="/mcp-small/"))["result"]["status"] == "working"


async def test_ttl_expiry_is_lazy_and_frees_the_cap(async_client):
    ids = [(await create(async_client, "quick", path="/mcp-small/"))["taskId"] for _ in range(3)]
    for task_id in ids:  # none expires early (ttlMs is 1500)
        await wait_for(async_client, task_id, "completed", path="/mcp-small/")
    with time_machine.travel(datetime.now(UTC) + timedelta(seconds=1.6), tick=True):
        expired = await get(async_client, ids[0], path="/mcp-small/")
        assert error_of(expired) == {"code": -32602, "message": f"Unknown task: {ids[0]}", "data": {"taskId": ids[0]}}
        assert not await Task.objects.filter(pk=ids[0]).aexists()  # swept on access
        # The others expired: a creation at the cap sweeps them (the lazy sweep) and there is room for 3.
        fresh = [await create(async_client, "quick", path="/mcp-small/") for _ in range(3)]
        assert [f["resultType"] for f in fresh] == ["task"] * 3
        assert {str(pk) async for pk in Task.objects.values_list("pk", flat=True)} == {f["taskId"] for f in fresh}
        assert error_of(await rpc(async_client, "tools/call", {"name": "quick"}, path="/mcp-small/"))["data"] == {
            "maxTasks": 3
        }  # and the cap holds: live tasks are never swept


async def test_the_maintenance_loop_sweeps_expired_tasks_without_a_creation(async_client):
    ids = [(await create(async_client, "quick", path="/mcp-small/"))["taskId"] for _ in range(2)]
    for task_id in ids:
        await wait_for(async_client, task_id, "completed", path="/mcp-small/")
    with time_machine.travel(datetime.now(UTC) + timedelta(seconds=1.6), tick=True):
        await small_server.extension_plugins[0].runner.amaintain_once(lease_seconds=30)
    assert not await Task.objects.filter(pk__in=ids).aexists()
    assert (await TaskQuota.objects.aget(scope="mcp_small", owner="")).count == 0


# -- composition and races -------------------------------------------------------------------


async def test_mrtr_rounds_complete_before_the_task_is_created(async_client):
    first = await create(async_client, "ask_then_task")
    assert first["resultType"] == "input_required"
    assert "taskId" not in first
    assert await Task.objects.acount() == 0
    answer = {"name": {"action": "accept", "content": {"name": "Alice"}}}
    params = {"name": "ask_then_task", "arguments": {}, "inputResponses": answer, "requestState": first["requestState"]}
    handle = (await rpc(async_client, "tools/call", params, status=200))["result"]
    assert handle["resultType"] == "task"
    assert "requestState" not in handle and "inputRequests" not in handle
    done = await wait_for(async_client, handle["taskId"], "completed")
    assert done["result"]["content"][0]["text"] == "Hello Alice"


async def test_cancel_racing_completion_ends_in_one_terminal_state(async_client):
    ids = [(await create(async_client, "quick"))["taskId"] for _ in range(10)]
    await asyncio.gather(*(rpc(async_client, "tasks/cancel", {"taskId": i}, status=200) for i in ids))
    finals = [await wait_for(async_client, i, "completed", "cancelled") for i in ids]
    await asyncio.sleep(0.1)
    again = [(await get(async_client, i))["result"] for i in ids]
    assert [f["status"] for f in finals] == [a["status"] for a in again]
    for final in again:
        assert ("result" in final) == (final["status"] == "completed")


# -- the declarative form, sync bodies, runs of the wrong kind ---------------------------------


async def test_declared_body_runs_as_the_task_and_asks_through_it(async_client):
    handle = await create(async_client, "declared", {"text": "doc"})
    assert handle["resultType"] == "task"
    parked = await wait_for(async_client, handle["taskId"], "input_required")
    assert parked["statusMessage"] == "working on doc"
    assert list(parked["inputRequests"]) == ["ok"]
    await rpc(
        async_client,
        "tasks/update",
        {"taskId": handle["taskId"], "inputResponses": {"ok": {"action": "accept"}}},
        status=200,
    )
    done = await wait_for(async_client, handle["taskId"], "completed")
    assert done["result"]["content"][0]["text"] == f"task {handle['taskId']}: doc accept"


async def test_declared_body_runs_in_the_request_for_a_non_declaring_client(async_client):
    result = await create(async_client, "declared", {"text": "doc"}, caps={})
    assert result["content"] == [{"type": "text", "text": "inline: doc"}]


async def test_a_sync_body_runs_as_the_task_with_sync_twins(async_client):
    handle = await create(async_client, "declared_sync", {"text": "doc"})
    parked = await wait_for(async_client, handle["taskId"], "input_required")
    assert parked["statusMessage"] == "sync working on doc"
    await rpc(
        async_client,
        "tasks/update",
        {"taskId": handle["taskId"], "inputResponses": {"ok": {"action": "decline"}}},
        status=200,
    )
    done = await wait_for(async_client, handle["taskId"], "completed")
    assert done["result"]["content"][0]["text"] == "sync task: doc decline"


async def test_a_sync_handler_starts_a_task_with_a_plain_def_run(async_client):
    handle = await create(async_client, "sync_starts_a_task")
    done = await wait_for(async_client, handle["taskId"], "completed", "failed")
    assert done["status"] == "completed"
    assert done["statusMessage"] == "in a thread"
    assert done["result"]["content"][0]["text"] == "ran in a thread"


async def test_a_run_that_is_a_coroutine_is_refused_before_any_task_exists(async_client):
    before = await Task.objects.acount()
    result = await create(async_client, "wrong_run")
    assert result["isError"] is True
    assert "not a coroutine" in result["content"][0]["text"]
    assert await Task.objects.acount() == before


async def test_tasks_methods_accept_a_missing_mcp_name_but_not_a_different_one(async_client):
    # fastmcp-tasks' client omits Mcp-Name on tasks/*; a header that is present must still match.
    task_id = (await create(async_client, "slow", {"seconds": 30}))["taskId"]
    body = request_body("tasks/get", {"taskId": task_id}, capabilities=CLIENT)
    response = await post(async_client, body, path="/mcp-tasks/", drop=("Mcp-Name",))
    assert response.status_code == 200
    assert json.loads(response.content)["result"]["taskId"] == task_id
    response = await post(async_client, body, path="/mcp-tasks/", headers={"Mcp-Name": "other"})
    assert (response.status_code, json.loads(response.content)["error"]["code"]) == (400, -32020)
    cancel = request_body("tasks/cancel", {"taskId": task_id}, capabilities=CLIENT)
    assert (await post(async_client, cancel, path="/mcp-tasks/", drop=("Mcp-Name",))).status_code == 200


# -- caps per server and per caller, counted without scanning the table ---------------------------


async def test_one_caller_cannot_starve_the_others(async_client):
    def as_(tenant):
        return {"X-Tenant": tenant}

    path = "/mcp-owner-cap/"
    for _ in range(2):
        await create(async_client, "slow", path=path, headers=as_("alice"))
    refused = await rpc(async_client, "tools/call", {"name": "slow"}, path=path, headers=as_("alice"), status=200)
    assert error_of(refused)["code"] == -32603 and error_of(refused)["data"] == {"maxTasksPerOwner": 2}
    for _ in range(2):
        await create(async_client, "slow", path=path, headers=as_("bob"))  # alice at her cap does not stop bob
    await create(async_client, "slow", path=path, headers=as_("carol"))
    full = await rpc(async_client, "tools/call", {"name": "slow"}, path=path, headers=as_("dave"), status=200)
    assert error_of(full)["data"] == {"maxTasks": 5}  # the server's own cap still holds


@pytest.mark.parametrize("max_tasks, per_owner", [(1000, 100), (25, 10), (3, 3), (200_000, 20_000)])
def test_the_per_caller_cap_is_on_by_default(max_tasks, per_owner):
    assert McpTasks(max_tasks=max_tasks).max_tasks_per_owner == per_owner
    assert McpTasks(max_tasks=max_tasks, max_tasks_per_owner=None).max_tasks_per_owner is None


async def test_anonymous_callers_are_capped_per_address_and_still_share_their_tasks(async_client):
    """/mcp-fair/: max_tasks=25, so 10 per caller; anonymous callers counted by client address."""
    body = request_body("tools/call", {"name": "slow", "arguments": {}}, capabilities=CLIENT)
    made = [(await post_from("10.1.0.1", body, "/mcp-fair/")).json()["result"] for _ in range(10)]
    assert {m["resultType"] for m in made} == {"task"}
    refused = (await post_from("10.1.0.1", body, "/mcp-fair/")).json()
    assert error_of(refused)["data"] == {"maxTasksPerOwner": 10}
    other = (await post_from("10.1.0.2", body, "/mcp-fair/")).json()["result"]
    assert other["resultType"] == "task"  # another anonymous client is not locked out
    # For the cap only: every anonymous caller still reads the same tasks.
    seen = (
        await post_from(
            "10.1.0.2", request_body("tasks/get", {"taskId": made[0]["taskId"]}, capabilities=CLIENT), "/mcp-fair/"
        )
    ).json()
    assert seen["result"]["taskId"] == made[0]["taskId"]
    rows = {row async for row in Task.objects.filter(scope="mcp_fair").values_list("owner", "counted_as").distinct()}
    owners, counted = {o for o, _ in rows}, {c for _, c in rows}
    assert len(owners) == 1 and len(counted) == 2


async def test_each_server_counts_its_own_cap(async_client):
    for _ in range(3):
        await create(async_client, "slow", path="/mcp-small/")
    assert error_of(await rpc(async_client, "tools/call", {"name": "slow"}, path="/mcp-small/", status=200))
    assert (await create(async_client, "slow", path="/mcp-owner-cap/"))["resultType"] == "task"


async def test_counters_follow_deletions_and_can_be_rebuilt(async_client):
    from io import StringIO

    from django.core.management import call_command

    ids = [(await create(async_client, "slow", path="/mcp-small/"))["taskId"] for _ in range(3)]
    await Task.objects.filter(pk__in=ids).adelete()  # behind the store's back: the counter still says 3
    assert error_of(await rpc(async_client, "tools/call", {"name": "slow"}, path="/mcp-small/", status=200))
    await sync_to_async(call_command)("mcp_clear_tasks", "--recount", stdout=StringIO())
    assert (await create(async_client, "slow", path="/mcp-small/"))["resultType"] == "task"


async def test_a_nul_character_in_arguments_or_answers_is_refused_as_params(async_client):
    body = await rpc(async_client, "tools/call", {"name": "quick", "arguments": {"text": "a\u0000b"}}, status=400)
    assert error_of(body)["code"] == -32602 and "NUL" in error_of(body)["message"]
    assert await Task.objects.filter(tool="quick").acount() == 0


@pytest.mark.parametrize("bad", ["a\u0000b", "a\ud800b", "\udfff"], ids=["nul", "high", "low"])
async def test_what_jsonb_cannot_hold_is_refused_as_params_everywhere_it_is_stored(async_client, bad):
    """NUL and lone surrogates: PostgreSQL's jsonb refuses both, so every backend refuses them (-32602)."""
    why = "NUL" if "\x00" in bad else "lone surrogate"
    body = await rpc(async_client, "tools/call", {"name": "quick", "arguments": {"text": bad}}, status=400)
    assert error_of(body)["code"] == -32602 and why in error_of(body)["message"]
    body = await rpc(async_client, "tools/call", {"name": "declared", "arguments": {"text": "x", bad: 1}}, status=400)
    assert why in error_of(body)["message"]
    assert await Task.objects.acount() == 0
    task_id = (await create(async_client, "declared"))["taskId"]
    await wait_for(async_client, task_id, "input_required")
    update = {"taskId": task_id, "inputResponses": {"ok": {"action": "accept", "content": {"note": bad}}}}
    body = await rpc(async_client, "tasks/update", update, status=400)
    assert error_of(body)["code"] == -32602 and "inputResponses" in error_of(body)["message"]
    assert (await get(async_client, task_id))["result"]["status"] == "input_required"  # nothing was stored


async def test_the_primary_key_read_loads_a_task_exactly_as_the_orm_does(async_client):
    # operations._read builds its SQL and converters from the model once; every field must come back as
    # the ORM loads it (UUIDs, datetimes, JSON, the user foreign key), on SQLite and on PostgreSQL.
    from django.contrib.auth.models import User

    from django_mcp.tasks.store import operations

    user = await User.objects.acreate(username="reader")
    handle = await create(async_client, "slow", {"seconds": 30}, caps=EXT)
    await Task.objects.filter(pk=handle["taskId"]).aupdate(
        user=user, result={"content": [{"type": "text", "text": "é"}]}, input_requests={"k": {"method": "x"}}
    )
    orm = await Task.objects.aget(pk=handle["taskId"])
    fast = await sync_to_async(operations._read)(uuid.UUID(handle["taskId"]), orm.owner)

    def fields(task: Task) -> dict[str, Any]:
        return {f.attname: getattr(task, f.attname) for f in Task._meta.concrete_fields}

    assert fast is not None and fields(fast) == fields(orm)
    assert (fast._state.adding, fast._state.db) == (False, orm._state.db)
    assert await sync_to_async(operations._read)(uuid.UUID(handle["taskId"]), "someone else") is None
    assert await sync_to_async(operations._read)(uuid.uuid4()) is None


async def test_creation_inserts_every_field_as_the_orm_would(async_client):
    # operations.create writes its INSERT from the model once (no save()): what the ORM loads back must
    # be the row the store returned (UUID, datetimes, JSON with non-ASCII, the user foreign key).
    from django.contrib.auth.models import User

    from django_mcp.tasks.store import operations

    user = await User.objects.acreate(username="creator")
    row = await sync_to_async(operations.create)(
        tool="quick",
        owner="sha256:someone",
        scope="tests",
        arguments={"text": "é\u2028", "n": [1, 2.5, None, True]},
        status_message="Working",
        ttl_ms=60_000,
        poll_interval_ms=500,
        max_tasks=10,
        max_tasks_per_owner=None,
        node="node-1",
        lease_seconds=30,
        request_meta={"progressToken": 7},
        user=user,
        owner_kind="user",
    )
    orm = await Task.objects.select_related(None).aget(pk=row.pk)

    def fields(task: Task) -> dict[str, Any]:
        return {f.attname: getattr(task, f.attname) for f in Task._meta.concrete_fields}

    assert fields(orm) == fields(row) and not row._state.adding
    assert orm.arguments == {"text": "é\u2028", "n": [1, 2.5, None, True]} and orm.user_id == user.pk


async def test_a_task_run_where_it_was_created_stores_no_request_metadata(async_client):
    # Only a worker rebuilds the request from it (test_fleet.py): the creating process has the request.
    handle = await create(async_client, "slow", {"seconds": 30})
    task = await Task.objects.aget(pk=handle["taskId"])
    assert (task.backend, task.request_meta, task.status) == ("", {}, "working")


@pytest.mark.parametrize("returning", [True, False], ids=["update-returning", "orm-update-then-read"])
async def test_finishing_writes_and_returns_the_task_as_the_orm_sees_it(async_client, monkeypatch, returning):
    # operations.finish is one UPDATE … RETURNING built from the model (or, where UPDATE returns no rows,
    # the ORM's update and a read): a compare-and-set on the status whose returned row must be what
    # the ORM then loads (JSON, datetimes), and None once terminal.
    from django.db import connection

    from django_mcp.tasks.store import operations, prepared

    if returning and connection.vendor not in ("postgresql", "sqlite"):
        pytest.skip(f"{connection.vendor} has no UPDATE … RETURNING")
    monkeypatch.setattr(prepared, "update_returns_rows", lambda conn: returning)

    handle = await create(async_client, "slow", {"seconds": 30}, caps=EXT)
    await sync_to_async(operations.set_status_message)(handle["taskId"], "halfway")
    result = {"content": [{"type": "text", "text": "é\u2028"}], "structuredContent": {"n": [1, None]}}
    done = await sync_to_async(operations.finish)(handle["taskId"], "completed", result=result, message="done")
    orm = await Task.objects.aget(pk=handle["taskId"])

    def fields(task: Task) -> dict[str, Any]:
        deferred = task.get_deferred_fields()
        return {f.attname: getattr(task, f.attname) for f in Task._meta.concrete_fields if f.attname not in deferred}

    # What a finished task is published with comes back; the rest (arguments, answers …) stays deferred.
    assert done is not None and fields(done) == {k: v for k, v in fields(orm).items() if k in fields(done)}
    assert set(fields(done)) == {"id", "expires_at", "watched", "tool", *DETAILED_FIELDS}
    assert (orm.status, orm.status_message, orm.result, orm.input_requests) == ("completed", "done", result, {})
    assert orm.updated_at > orm.created_at
    assert await sync_to_async(operations.finish)(handle["taskId"], "failed", error={"x": 1}) is None
    assert await sync_to_async(operations.set_status_message)(handle["taskId"], "again") is None
    assert (await Task.objects.aget(pk=handle["taskId"])).status == "completed"


@pytest.mark.skipif(os.environ.get("DJANGO_MCP_DATABASE", "sqlite") != "sqlite", reason="SQLite's one-writer rule")
def test_on_sqlite_the_store_threads_write_one_at_a_time_and_read_together():
    # A SQLite writer that finds the file locked sleeps in its busy handler for milliseconds; the
    # store's own threads queue on a lock instead (3× the creations per second in bench/).
    from concurrent.futures import ThreadPoolExecutor
    from threading import Lock

    from django_mcp.tasks.store import task_store

    inside, most, count = 0, 0, Lock()

    def work() -> None:
        nonlocal inside, most
        with count:
            inside += 1
            most = max(most, inside)
        time.sleep(0.02)
        with count:
            inside -= 1

    seen = {}
    for writes in (True, False):
        inside = most = 0
        guarded = task_store.guarded(work, writes=writes)
        with ThreadPoolExecutor(4) as pool:
            for future in [pool.submit(guarded) for _ in range(8)]:
                future.result()
        seen[writes] = most
    assert seen[True] == 1 and seen[False] > 1, seen


def test_a_creation_whose_insert_fails_leaves_the_counters_as_they_were():
    from django.db import IntegrityError

    from django_mcp.tasks.store import operations

    fields = {
        "tool": "t", "owner": "o", "scope": "give-back", "arguments": {}, "status_message": "", "ttl_ms": None,
        "poll_interval_ms": 100, "max_tasks": 5, "max_tasks_per_owner": 3, "node": "n", "lease_seconds": 30,
    }  # fmt: skip
    first = operations.create(**fields)
    with pytest.raises(IntegrityError):
        operations.create(task_id=first.id, **fields)  # the same id: the insert fails after the counting
    counts = dict(TaskQuota.objects.filter(scope="give-back").values_list("owner", "count"))
    assert counts == {"": 1, "o": 1}


@pytest.mark.skipif(os.environ.get("DJANGO_MCP_DATABASE") != "postgres", reason="PostgreSQL's commit modes")
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("per_owner", [None, 3], ids=["server-cap", "server-and-owner-caps"])
def test_on_postgresql_the_counting_commits_lazily_and_leaves_the_session_as_it_was(per_owner, settings):
    settings.DJANGO_MCP = {**settings.DJANGO_MCP, "TASK_FAST_PATHS": True}  # one of the fast paths
    # With only the server's cap, the counting is one autocommit statement whose own commit skips
    # the WAL flush (SET LOCAL in a transaction would cost three more round trips); two counters move
    # together in a transaction. Either way the connection keeps its synchronous_commit.
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from django_mcp.tasks.store import errors, operations

    fields = {
        "tool": "t", "owner": "o", "scope": "lazily", "arguments": {}, "status_message": "", "ttl_ms": None,
        "poll_interval_ms": 100, "max_tasks": 3, "max_tasks_per_owner": per_owner, "node": "n", "lease_seconds": 30,
    }  # fmt: skip
    operations.create(**fields)  # makes the counter rows
    with CaptureQueriesContext(connection) as queries:
        operations.create(**fields)
    statements = [query["sql"].split()[0] for query in queries]  # BEGIN and COMMIT where Django logs them
    if per_owner is None:
        assert statements == ["UPDATE", "INSERT"]
        assert "set_config('synchronous_commit', 'off', true)" in queries[0]["sql"]
    else:
        assert [s for s in statements if s not in ("BEGIN", "COMMIT")] == ["SET", "UPDATE", "UPDATE", "INSERT"]
    with connection.cursor() as cursor:
        cursor.execute("SHOW synchronous_commit")
        assert cursor.fetchone()[0] == "on"
    operations.create(**fields)
    with pytest.raises(errors.TaskLimitReached):  # the cap still counts every creation, and refuses the 4th
        operations.create(**fields)
    counts = dict(TaskQuota.objects.filter(scope="lazily").values_list("owner", "count"))
    assert counts == ({"": 3} if per_owner is None else {"": 3, "o": 3})


def test_a_counter_row_committed_by_a_concurrent_first_creation_is_not_taken_for_the_cap(monkeypatch):
    # Two first creations race: one's UPDATE finds no counter row, the other's row is committed
    # before the first one looks again. The first must count on that row, not refuse at the cap
    # (seen in bench/: one of 1,000 concurrent first creations refused "at most 2000000 tasks").
    from django_mcp.tasks.store import caps, operations

    fields = {
        "tool": "t", "owner": "o", "scope": "race", "arguments": {}, "status_message": "", "ttl_ms": None,
        "poll_interval_ms": 100, "max_tasks": 5, "max_tasks_per_owner": 3, "node": "n", "lease_seconds": 30,
    }  # fmt: skip
    operations.create(**fields)  # both counter rows exist, at 1
    increment, missed = caps.increment, []

    def miss_once_each(scope: str, owner: str, limit: int, **kwargs: Any) -> bool:
        if owner not in missed:  # as if the row were not there yet when this UPDATE ran
            missed.append(owner)
            return False
        return increment(scope, owner, limit, **kwargs)

    monkeypatch.setattr(caps, "increment", miss_once_each)  # counting alone, and in take_place
    monkeypatch.setattr(operations, "increment", miss_once_each)
    operations.create(**fields)
    assert missed == ["", "o"]
    counts = dict(TaskQuota.objects.filter(scope="race").values_list("owner", "count"))
    assert counts == {"": 2, "o": 2}


@pytest.mark.skipif(os.environ.get("DJANGO_MCP_DATABASE", "sqlite") == "sqlite", reason="concurrent writers: a server")
@pytest.mark.django_db(transaction=True)
def test_concurrent_first_creations_all_count_and_none_is_refused():
    # The same race on a real database: creations on threads of their own, all before any counter
    # row exists (the store makes it from a count, once). None may be refused below the caps.
    from concurrent.futures import ThreadPoolExecutor
    from threading import Barrier

    from django_mcp.tasks.store import operations, task_store

    fields = {
        "tool": "t", "owner": "o", "scope": "first", "arguments": {}, "status_message": "", "ttl_ms": None,
        "poll_interval_ms": 100, "max_tasks": 100, "max_tasks_per_owner": None, "node": "n", "lease_seconds": 30,
    }  # fmt: skip
    create = task_store.guarded(operations.create, writes=True)

    def create_at_once(start: Barrier, **given: Any) -> Task:
        start.wait(timeout=10)
        return create(**given)

    for round_no, per_owner in enumerate((None, 50)):
        scope, start = f"first-{round_no}", Barrier(12)
        given = {**fields, "scope": scope, "max_tasks_per_owner": per_owner}
        with ThreadPoolExecutor(12) as pool:
            created = [future.result() for future in [pool.submit(create_at_once, start, **given) for _ in range(12)]]
        counts = dict(TaskQuota.objects.filter(scope=scope).values_list("owner", "count"))
        assert len({task.pk for task in created}) == 12
        assert counts == ({"": 12} if per_owner is None else {"": 12, "o": 12})


def test_giving_back_a_place_while_the_database_is_down_logs_and_does_not_mask_the_error(caplog):
    from unittest import mock

    from django.db import OperationalError

    from django_mcp.tasks.store import caps

    with mock.patch("django.db.models.query.QuerySet.update", side_effect=OperationalError("down")):
        caps.give_back("give-back", "o")  # called while the insert's own error propagates
    assert "mcp_clear_tasks --recount" in caplog.text


@pytest.mark.parametrize(
    "moment",
    [
        datetime(2026, 8, 1, 10, 30, 0, 123456, tzinfo=UTC),
        datetime(2026, 8, 1, 12, 30, 0, 123456, tzinfo=timezone(timedelta(hours=2))),
        datetime(2026, 8, 1, 10, 30, 0, 123456, tzinfo=ZoneInfo("UTC")),
        datetime(2026, 8, 1, 6, 30, 0, 123456, tzinfo=ZoneInfo("America/New_York")),
    ],
)
def test_wire_timestamps_are_utc_with_milliseconds(moment):
    assert timestamp(moment) == "2026-08-01T10:30:00.123Z"


def test_a_naive_wire_timestamp_is_read_in_the_projects_time_zone_as_django_reads_it(settings):
    settings.TIME_ZONE = "America/New_York"  # USE_TZ = False keeps naive datetimes in this zone
    assert timestamp(datetime(2026, 8, 1, 6, 30, 0, 123456)) == "2026-08-01T10:30:00.123Z"
