"""The project's signals: ``tool_called`` (django_mcp) and ``task_created``/``task_changed``/``task_finished``
(django_mcp.tasks), each sent once, with the documented arguments."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from django_mcp import McpRequest, Tool, tool_called
from django_mcp.models import Task
from django_mcp.tasks import task_changed, task_created, task_finished
from django_mcp.testing import McpClient, McpError
from tests.task_servers import stop_all_tasks

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def received() -> Iterator[dict[str, list[dict[str, Any]]]]:
    seen: dict[str, list[dict[str, Any]]] = {"tool": [], "created": [], "changed": [], "finished": []}
    receivers = {
        "tool": lambda sender, **kw: seen["tool"].append({"sender": sender, **kw}),
        "created": lambda sender, **kw: seen["created"].append({"sender": sender, **kw}),
        "changed": lambda sender, **kw: seen["changed"].append({"sender": sender, **kw}),
        "finished": lambda sender, **kw: seen["finished"].append({"sender": sender, **kw}),
    }
    signals = {"tool": tool_called, "created": task_created, "changed": task_changed, "finished": task_finished}
    for key, signal in signals.items():
        signal.connect(receivers[key], weak=False, dispatch_uid=f"test-{key}")
    yield seen
    for key, signal in signals.items():
        signal.disconnect(dispatch_uid=f"test-{key}")


async def test_tool_called_says_who_which_how_and_how_long(received):
    async with McpClient("/mcp", capabilities={"elicitation": {}}) as mcp:
        await mcp.acall_tool("add", {"a": 1})
        await mcp.acall_tool("boom")
        await mcp.acall_tool("greet_me")  # an MRTR round, no answer given
        with pytest.raises(McpError):
            await mcp.acall_tool("add", {"a": "x"})
    outcomes = [(call["tool"], call["outcome"]) for call in received["tool"]]
    assert outcomes == [("add", "result"), ("boom", "error"), ("greet_me", "input_required"), ("add", "refused")]
    first = received["tool"][0]
    assert first["sender"] is Tool and isinstance(first["request"], McpRequest)
    assert first["request"].principal_key == "anonymous" and 0 <= first["duration"] < 5


async def test_task_signals_are_sent_once_each_by_the_process_that_made_the_change(received):
    try:
        async with McpClient("/mcp-tasks") as mcp:
            handle = await mcp.astart_task("declared_sync_progress", {"steps": 2})
            done = await mcp.await_task(handle["taskId"])
        assert done["status"] == "completed"
        assert [c["outcome"] for c in received["tool"]] == ["task"]
        [created] = received["created"]
        assert created["sender"] is Task and str(created["task"].pk) == handle["taskId"]
        assert isinstance(created["request"], McpRequest)
        messages = [c["task"].status_message for c in received["changed"]]
        assert messages[:2] == ["step 1/2", "step 2/2"] and received["changed"][-1]["task"].status == "completed"
        [finished] = received["finished"]
        assert (str(finished["task"].pk), finished["task"].status) == (handle["taskId"], "completed")
    finally:
        await stop_all_tasks()


async def test_no_receiver_no_signal_work(monkeypatch):
    # Without receivers the call path never builds the signal's arguments (it stays as fast as before).
    async def never(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("sent without receivers")

    monkeypatch.setattr(tool_called, "asend", never)
    async with McpClient("/mcp") as mcp:
        assert (await mcp.acall_tool("add", {"a": 1, "b": 1}))["content"][0]["text"] == "2"
