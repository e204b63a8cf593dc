"""Time limits: a tool's ``timeout_seconds`` for a call answered in the request, a task's
``task_timeout_seconds`` for its body (in the web process and on a fleet worker alike: the runner's)."""

from __future__ import annotations

import pytest

from django_mcp import DefinitionError, ToolRegistry
from tests.task_calls import EXT, rpc, wait_for

pytestmark = pytest.mark.django_db(transaction=True)

PATH = "/mcp-timeouts/"


async def call(client, name, arguments=None, caps=None):
    params = {"name": name, "arguments": arguments or {}}
    return await rpc(client, "tools/call", params, path=PATH, caps=caps if caps is not None else {})


@pytest.mark.parametrize("tool", ["slow_async", "slow_sync"])
async def test_a_call_past_its_limit_answers_an_error_naming_the_limit(async_client, tool):
    result = (await call(async_client, tool))["result"]  # the handlers would answer "finished"
    assert result["isError"] is True
    assert result["content"][0]["text"] == f"Tool {tool!r} did not finish within its time limit of 0.2 s"


async def test_a_call_within_its_limit_answers_as_usual(async_client):
    result = (await call(async_client, "slow_async", {"seconds": 0.01}))["result"]
    assert result["content"][0]["text"] == "finished" and not result.get("isError")


async def test_a_tool_that_can_run_as_a_task_says_so_and_as_a_task_it_is_not_bound(async_client):
    result = (await call(async_client, "slow_report"))["result"]
    assert result["isError"] and "it can run as a task instead" in result["content"][0]["text"]
    handle = (await call(async_client, "slow_report", caps=EXT))["result"]
    done = await wait_for(async_client, handle["taskId"], "completed", "failed", path=PATH, caps=EXT)
    assert done["status"] == "completed" and done["result"]["content"][0]["text"] == "report ready"


@pytest.mark.parametrize("tool", ["bounded_job", "bounded_sync_job"])
async def test_a_task_past_its_limit_fails_task_timed_out(async_client, tool):
    handle = (await call(async_client, tool, caps=EXT))["result"]
    done = await wait_for(async_client, handle["taskId"], "completed", "failed", path=PATH, caps=EXT)
    assert done["status"] == "failed"
    assert done["error"]["message"] == "Task timed out: it ran longer than 0.3 s"
    assert done["statusMessage"] == "Task timed out: it ran longer than 0.3 s"


async def test_a_task_within_its_limit_completes(async_client):
    handle = (await call(async_client, "bounded_job", {"seconds": 0.01}, caps=EXT))["result"]
    done = await wait_for(async_client, handle["taskId"], "completed", "failed", path=PATH, caps=EXT)
    assert done["status"] == "completed"


@pytest.mark.parametrize("value", [0, -1, float("inf"), "5", True])
def test_a_bad_timeout_is_a_definition_error(value):
    with pytest.raises(DefinitionError, match="timeout_seconds must be a positive number"):
        ToolRegistry().register(lambda request: 1, name="t", timeout_seconds=value)


def test_a_bad_task_timeout_is_check_e006():
    from django_mcp import McpServer
    from django_mcp.checks import check_servers
    from django_mcp.tasks import McpTasks

    tools = ToolRegistry()
    tools.register(lambda request: 1, name="t", task_support="optional", task_timeout_seconds=-1)
    server = McpServer(tools=tools, extension_plugins=[McpTasks()], urls_namespace="bad_task_timeout")
    from unittest import mock

    try:
        with mock.patch("django_mcp.checks.built_servers", return_value=[server]):
            [error] = check_servers()
    finally:
        tools.unregister("t")  # the plugin outlives the test (shutdown hooks): leave no bad tool to other checks
    assert error.id == "django_mcp.E006" and "task_timeout_seconds must be a positive number" in error.msg
