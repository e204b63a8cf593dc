"""The tasks extension: creation, polling, outcomes, cancellation, input mid-flight, binding, retention."""

from __future__ import annotations

import asyncio
import json
import re
import uuid
from datetime import UTC, datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest
import time_machine

from django_mcp.models import Task
from django_mcp.tasks import EXTENSION_ID, McpTasks, astart_task
from django_mcp.tasks.store.database import new_task_id
from django_mcp.tasks.wire import timestamp
from tests.task_calls import CLIENT, EXT, create, error_of, get, owner_key, rpc, wait_for
from tests.task_servers import EVENTS, stop_all_tasks
from tests.wire import assert_wire, post, request_body

pytestmark = pytest.mark.django_db(transaction=True)

TASKS_SCHEMA = "tasks-2026-07-28.schema.json"
ISO = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$")
TASK_FIELDS = {"taskId", "status", "statusMessage", "createdAt", "lastUpdatedAt", "ttlMs", "pollIntervalMs"}


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
    await stop_all_tasks()  # every body has ended: a late write would show now
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


@pytest.mark.parametrize(
    ("options", "said"),
    [
        ({"max_tasks": 0}, "McpTasks(max_tasks=...) must be a positive integer"),
        ({"max_tasks": True}, "McpTasks(max_tasks=...) must be a positive integer"),
        ({"max_tasks_per_owner": 0}, "McpTasks(max_tasks_per_owner=...) must be a positive integer or None"),
        ({"max_tasks_per_owner": 2.5}, "McpTasks(max_tasks_per_owner=...) must be a positive integer or None"),
        ({"ttl_seconds": 0}, "McpTasks(ttl_seconds=...) must be a positive number of seconds or None"),
        ({"ttl_seconds": "1h"}, "McpTasks(ttl_seconds=...) must be a positive number of seconds or None"),
        ({"poll_interval_seconds": 0}, "McpTasks(poll_interval_seconds=...) must be a positive number of seconds"),
    ],
)
def test_options_a_plugin_cannot_work_with_are_refused_when_it_is_made(options, said):
    from django.core.exceptions import ImproperlyConfigured

    with pytest.raises(ImproperlyConfigured) as refused:
        McpTasks(**options)
    assert str(refused.value) == said
