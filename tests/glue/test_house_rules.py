"""Rules of the house issue: principals never named by memory address, requestState bound to its server,
faults in a task's own bookkeeping never become tool results, driver text never reaches a client."""

from __future__ import annotations

import uuid
from unittest import mock

import pytest
from django.contrib.auth import get_user_model
from django.db import DataError, OperationalError
from django.test import RequestFactory

from django_mcp import McpRequest, elicit
from django_mcp.protocol.jsonrpc import RequestMeta
from django_mcp.server.caller import principal_of
from django_mcp.server.mrtr import InputRequired
from django_mcp.server.results import exception_result
from django_mcp.server.tools.definition import build_tool
from tests.task_calls import create, wait_for
from tests.task_servers import stop_all_tasks, tasks_server

META = RequestMeta.model_validate(
    {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
    }
)


def test_principals_are_named_by_value_or_primary_key_never_by_address():
    user = get_user_model()(pk=7, username="ada")
    assert principal_of("alice") == "str:alice"
    assert principal_of(42) == "int:42"
    assert principal_of(uuid.UUID(int=1)) == f"UUID:{uuid.UUID(int=1)}"
    assert principal_of(user) == "auth.user:7"
    assert principal_of(True) is None and principal_of(None) is None

    class Keyed:
        principal_key = "team:blue"

    assert principal_of(Keyed()) == "team:blue"
    with pytest.raises(TypeError, match="Cannot name the principal"):
        principal_of(object())  # its repr() is a memory address: refused, not used


def _request(namespace: str, params: dict) -> McpRequest:
    return McpRequest(
        RequestFactory().post("/"), request_id=1, method="tools/call", params=params, meta=META, namespace=namespace
    )


def test_request_state_is_bound_to_its_server():
    params = {"name": "greet", "arguments": {}}
    with pytest.raises(InputRequired) as asked:
        _request("server_a", params).ask({"who": elicit("Who?", {"type": "object"})})
    retry = {**params, "requestState": asked.value.request_state, "inputResponses": {"who": {"action": "decline"}}}
    assert _request("server_a", retry).ask({"who": elicit("Who?", {"type": "object"})})["who"].action == "decline"
    from django_mcp import McpJsonRpcError

    with pytest.raises(McpJsonRpcError, match="belongs to another request"):
        _request("server_b", retry).input_rounds  # noqa: B018 - a same-named tool on another server


def test_database_error_text_never_reaches_the_model():
    tool = build_tool(lambda request: None, name="t")
    result = exception_result(tool, DataError('invalid byte sequence near "SELECT owner FROM secret"'))
    assert result["isError"] is True
    assert "SELECT" not in result["content"][0]["text"] and "DataError" in result["content"][0]["text"]


@pytest.mark.django_db(transaction=True)
async def test_a_lost_database_in_a_tasks_own_bookkeeping_fails_it_never_an_is_error(async_client, settings):
    plugin = tasks_server.extension_plugins[0]
    # Parking waits out an outage as the final write does (test_tasks_failures.py); past that bound it fails.
    settings.DJANGO_MCP = {**settings.DJANGO_MCP, "TASK_FINAL_WRITE_RETRY_SECONDS": 0.5}
    try:
        # Parking for input is the task's own bookkeeping (a progress update is not: it is dropped).
        with mock.patch.object(plugin.store, "apark", side_effect=OperationalError("server closed")):
            task_id = (await create(async_client, "declared", {"text": "t"}))["taskId"]
            done = await wait_for(async_client, task_id, "completed", "failed")
        assert done["status"] == "failed"
        assert done["error"] == {"code": -32603, "message": "Task failed: the database was unavailable"}
    finally:
        await stop_all_tasks()
