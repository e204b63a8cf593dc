"""``django_mcp.testing.McpClient``: a project's tests calling its endpoint, in both eras, with no port."""

from __future__ import annotations

import pytest

from django_mcp.models import Task
from django_mcp.testing import McpClient, McpError, SyncMcpClient

pytestmark = pytest.mark.django_db(transaction=True)

ERAS = ["2026-07-28", "2025-11-25"]


def accept_name(method, params):
    assert method == "elicitation/create"
    return {"action": "accept", "content": {"name": "Ada"}}


@pytest.mark.parametrize("era", ERAS)
async def test_tools_in_both_eras(era):
    async with McpClient("/mcp", protocol_version=era) as mcp:
        assert "add" in {t["name"] for t in await mcp.alist_tools()}
        result = await mcp.acall_tool("add", {"a": 1, "b": 2})
        assert result["content"] == [{"type": "text", "text": "3"}]
        failed = await mcp.acall_tool("boom")
        assert failed["isError"] is True
        with pytest.raises(McpError) as unknown:
            await mcp.acall_tool("no_such_tool")
        assert unknown.value.code == -32602 and "Unknown tool" in unknown.value.message
    if era != "2026-07-28":
        assert mcp.session_id is None  # ended with DELETE


@pytest.mark.parametrize("era", ERAS)
async def test_questions_are_answered_in_both_eras(era):
    """2026-07-28: input_required, then a retry; handshake era: a request on the response stream."""
    mcp = McpClient("/mcp", protocol_version=era, capabilities={"elicitation": {}}, answer=accept_name)
    async with mcp:
        result = await mcp.acall_tool("greet_me")
    assert result["content"] == [{"type": "text", "text": "Hello Ada"}]


async def test_without_an_answer_the_question_is_returned():
    async with McpClient("/mcp", capabilities={"elicitation": {}}) as mcp:
        result = await mcp.acall_tool("greet_me")
    assert result["resultType"] == "input_required" and "who" in result["inputRequests"]


async def test_progress_notifications_are_kept():
    async with McpClient("/mcp") as mcp:
        body = mcp._body("tools/call", {"name": "progress_steps", "arguments": {"steps": 2}})
        body["params"]["_meta"]["progressToken"] = "t"
        await mcp._aresult(await mcp._apost(body))
    assert [n["params"]["progress"] for n in mcp.notifications] == [1, 2]


async def test_routing_headers_are_sent_from_the_tool_schema():
    async with McpClient("/mcp") as mcp:
        result = await mcp.acall_tool("routed", {"region": "eu-west", "limit": 3, "dry": True})
    assert result["content"] == [{"type": "text", "text": "eu-west:3:True"}]


@pytest.mark.parametrize("era", ERAS)
async def test_prompts_and_resources(era):
    async with McpClient("/mcp-content", protocol_version=era) as mcp:
        assert [p["name"] for p in await mcp.alist_prompts()] == ["hello", "paint", "broken_prompt"]
        painted = await mcp.aget_prompt("paint", {"colour": "red"})
        assert painted["messages"][0]["content"]["text"] == "Paint it red (plain)."
        assert "test://readme" in {r["uri"] for r in await mcp.alist_resources()}
        read = await mcp.aread_resource("test://readme")
        assert read["contents"][0]["text"] == "Read me."


async def test_a_task_created_answered_and_waited_for():
    async with McpClient("/mcp-tasks", capabilities={"elicitation": {}}) as mcp:
        handle = await mcp.astart_task("declared", {"text": "t"})
        parked = await mcp.await_task(handle["taskId"], "input_required")
        [key] = parked["inputRequests"]
        await mcp.aupdate_task(handle["taskId"], {key: {"action": "accept", "content": {"ok": True}}})
        done = await mcp.await_task(handle["taskId"])
    assert done["status"] == "completed"
    assert done["result"]["content"][0]["text"] == f"task {handle['taskId']}: t accept"


async def test_a_task_cancelled_and_seen_on_a_listen_stream():
    async with McpClient("/mcp-tasks") as mcp:
        handle = await mcp.astart_task("slow", {"seconds": 30})
        async with mcp.alisten({"taskIds": [handle["taskId"]]}) as messages:
            acknowledged = await anext(messages)
            assert acknowledged["params"]["notifications"]["taskIds"] == [handle["taskId"]]
            await mcp.acancel_task(handle["taskId"])
            async for message in messages:
                if message.get("method") == "notifications/tasks" and message["params"]["status"] == "cancelled":
                    break
        assert (await mcp.aget_task(handle["taskId"]))["status"] == "cancelled"


async def test_without_the_extension_a_task_tool_answers_at_once():
    async with McpClient("/mcp-tasks", tasks=False) as mcp:
        with pytest.raises(ValueError, match="answered without a task"):
            await mcp.astart_task("declared", {"text": "t"})
        with pytest.raises(McpError) as refused:
            await mcp.acall_tool("only_as_task")
    assert refused.value.code == -32021 and refused.value.http_status == 400
    assert await Task.objects.acount() == 0


async def test_a_handshake_session_refuses_tasks_methods():
    async with McpClient("/mcp-tasks", protocol_version="2025-11-25") as mcp:
        with pytest.raises(McpError) as refused:
            await mcp.aget_task("x")
    assert refused.value.code == -32601


def test_an_unknown_revision_is_refused_at_once():
    with pytest.raises(ValueError, match="protocol_version must be"):
        McpClient(protocol_version="2099-01-01")


async def test_leaving_alisten_ends_the_servers_stream(settings):
    """Three listens one after another, two allowed at once: each exit must free its place."""
    from django_mcp.server.listen import open_listen_streams

    settings.DJANGO_MCP = {**settings.DJANGO_MCP, "LISTEN_MAX_STREAMS_PER_PRINCIPAL": 2}
    async with McpClient("/mcp-tasks") as mcp:
        handle = await mcp.astart_task("slow", {"seconds": 30})
        for _ in range(3):
            async with mcp.alisten({"taskIds": [handle["taskId"]]}) as messages:
                assert (await anext(messages))["method"] == "notifications/subscriptions/acknowledged"
        assert open_listen_streams() == 0
        await mcp.acancel_task(handle["taskId"])


async def test_a_refused_listen_raises_mcp_error(settings):
    settings.DJANGO_MCP = {**settings.DJANGO_MCP, "LISTEN_MAX_STREAMS_PER_PRINCIPAL": 1}
    async with McpClient("/mcp-tasks") as mcp:
        async with mcp.alisten({"toolsListChanged": True}):
            with pytest.raises(McpError) as refused:
                async with mcp.alisten({"toolsListChanged": True}):
                    pass
    assert (refused.value.http_status, refused.value.code) == (429, -32603)


# -- SyncMcpClient: the same, from plain test functions ------------------------------------------------


@pytest.mark.parametrize("era", ERAS)
def test_the_sync_twin_calls_tools_in_both_eras(era):
    with SyncMcpClient("/mcp", protocol_version=era) as mcp:
        assert "add" in {t["name"] for t in mcp.list_tools()}
        assert mcp.call_tool("add", {"a": 1, "b": 2})["content"] == [{"type": "text", "text": "3"}]
        with pytest.raises(McpError) as unknown:
            mcp.call_tool("no_such_tool")
        assert unknown.value.code == -32602
        if era != "2026-07-28":
            assert mcp.session_id is not None
    assert mcp.session_id is None  # a handshake-era session ended with DELETE
    mcp.close()  # closing twice is harmless


def test_the_sync_twin_keeps_a_task_running_between_calls_and_answers_it():
    with SyncMcpClient("/mcp-tasks", capabilities={"elicitation": {}}) as mcp:
        handle = mcp.start_task("declared", {"text": "sync"})
        waiting = mcp.wait_task(handle["taskId"], "input_required")
        key = next(iter(waiting["inputRequests"]))
        mcp.update_task(handle["taskId"], {key: {"action": "accept", "content": {"ok": True}}})
        done = mcp.wait_task(handle["taskId"])
    assert done["status"] == "completed"
    assert done["result"]["content"][0]["text"].endswith("sync accept")


def test_the_sync_twin_cancels_and_its_close_stops_what_still_runs():
    with SyncMcpClient("/mcp-tasks") as mcp:
        cancelled = mcp.start_task("slow", {"seconds": 30})
        mcp.cancel_task(cancelled["taskId"])
        assert mcp.wait_task(cancelled["taskId"], "cancelled")["status"] == "cancelled"
        left_running = mcp.start_task("slow", {"seconds": 30})
        assert mcp.get_task(left_running["taskId"])["status"] == "working"
    assert mcp._loop.is_closed()
    assert Task.objects.get(pk=cancelled["taskId"]).status == "cancelled"


def test_the_sync_twin_reads_prompts_resources_and_sends_notifications():
    with SyncMcpClient("/mcp-content") as mcp:
        assert [p["name"] for p in mcp.list_prompts()] == ["hello", "paint", "broken_prompt"]
        assert mcp.get_prompt("paint", {"colour": "red"})["messages"][0]["content"]["text"] == "Paint it red (plain)."
        assert "test://readme" in {r["uri"] for r in mcp.list_resources()}
        assert mcp.read_resource("test://readme")["contents"][0]["text"] == "Read me."
        mcp.notify("notifications/cancelled", {"requestId": 99})
        assert mcp.request("server/discover")["supportedVersions"]


async def test_a_handshake_client_without_an_answer_refuses_the_servers_question():
    """The server's request on the response stream is answered -32601, which fails the tool call."""
    async with McpClient("/mcp", protocol_version="2025-11-25", capabilities={"elicitation": {}}) as mcp:
        with pytest.raises(McpError) as refused:
            await mcp.acall_tool("greet_me")  # connects on first use
        assert refused.value.code == -32603
        assert "This test client does not answer elicitation/create" in refused.value.message
        assert await mcp.aconnect() == mcp.server_info  # once connected, connecting again sends nothing


async def test_a_notification_the_server_refuses_raises_mcp_error():
    mcp = McpClient("/mcp", headers={"Origin": "https://elsewhere.example"})  # a page of another site
    with pytest.raises(McpError) as refused:
        await mcp.anotify("notifications/roots/list_changed")
    assert refused.value.http_status == 403


async def test_a_logged_in_client_calls_as_its_user(async_client, django_user_model):
    from asgiref.sync import sync_to_async

    user = await sync_to_async(django_user_model.objects.create_user)("ada")
    await async_client.aforce_login(user)
    async with McpClient("/mcp-tasks/", client=async_client) as mcp:
        handle = await mcp.acall_tool("slow", {"seconds": 30})
        await mcp.arequest("tasks/cancel", {"taskId": handle["taskId"]})
    assert (await Task.objects.aget(pk=handle["taskId"])).user_id == user.pk  # its session cookie went along
