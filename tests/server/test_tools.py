"""tools/list and tools/call through the endpoint."""

import base64
import json
import threading

import pytest

from django_mcp import registry
from tests.toolapp.tools import EVENTS, SCHEMA_2020
from tests.wire import assert_wire, call, post, request_body


async def _all_tools(client):
    tools, cursor, pages = [], None, 0
    while True:
        params = {"cursor": cursor} if cursor else {}
        r = await call(client, "tools/list", params)
        assert_wire(r, "ListToolsResultResponse")
        pages += 1
        tools += r["result"]["tools"]
        assert r["result"]["cacheScope"] == "private"
        cursor = r["result"].get("nextCursor")
        if not cursor:
            return tools, pages


async def test_tools_list_pages_through_every_tool_in_registration_order(async_client):
    tools, pages = await _all_tools(async_client)
    names = [t["name"] for t in tools]
    assert names == [t.name for t in registry]
    assert pages == -(-len(names) // 3)  # PAGE_SIZE is 3 in the test settings
    assert len(set(names)) == len(names)
    again, _ = await _all_tools(async_client)
    assert [t["name"] for t in again] == names


async def test_tool_wire_fields(async_client):
    tools = {t["name"]: t for t in (await _all_tools(async_client))[0]}
    add = tools["add"]
    assert add == {
        "name": "add",
        "title": "Add",
        "description": "Add two integers.",
        "inputSchema": {
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"default": 0, "type": "integer"}},
            "required": ["a"],
        },
        "annotations": {"readOnlyHint": True},
    }
    assert tools["stats"]["outputSchema"]["required"] == ["count"]


async def test_input_schema_is_passed_through_verbatim(async_client):
    tools = {t["name"]: t for t in (await _all_tools(async_client))[0]}
    assert tools["schema_2020"]["inputSchema"] == SCHEMA_2020
    assert list(tools["schema_2020"]["inputSchema"]) == list(SCHEMA_2020)  # key order too


@pytest.mark.parametrize("cursor", ["garbage", "b2Zmc2V0Ojk5OQ==", 5, ""])
async def test_bad_cursor_is_32602(async_client, cursor):
    response = await post(async_client, request_body("tools/list", {"cursor": cursor}))
    assert response.status_code == 400
    assert json.loads(response.content)["error"]["code"] == -32602


async def test_call_sync_tool_runs_off_the_event_loop(async_client):
    r = await call(async_client, "tools/call", {"name": "add", "arguments": {"a": 2, "b": 40}})
    assert_wire(r, "CallToolResultResponse")
    assert r["result"]["content"] == [{"type": "text", "text": "42"}]
    assert "isError" not in r["result"]
    assert EVENTS["add_thread"] != threading.get_ident()


async def test_call_async_tool(async_client):
    r = await call(async_client, "tools/call", {"name": "async_echo", "arguments": {"text": "héllo"}})
    assert r["result"]["content"] == [{"type": "text", "text": "héllo"}]


async def test_arguments_may_be_omitted_when_none_are_required(async_client):
    r = await call(async_client, "tools/call", {"name": "whoami"})
    assert r["result"]["content"] == [{"type": "text", "text": "None"}]


async def test_legacy_task_param_is_ignored(async_client):
    r = await call(async_client, "tools/call", {"name": "add", "arguments": {"a": 1}, "task": {"ttl": 1000}})
    assert r["result"]["resultType"] == "complete"
    assert r["result"]["content"][0]["text"] == "1"


@pytest.mark.parametrize(
    "arguments,path",
    [
        ({}, ""),
        ({"a": "one"}, "/a"),
        ({"a": 1, "b": 2.5}, "/b"),
        ([1, 2], None),
    ],
)
async def test_invalid_arguments_are_32602_naming_the_path(async_client, arguments, path):
    response = await post(async_client, request_body("tools/call", {"name": "add", "arguments": arguments}))
    assert response.status_code == 400
    error = json.loads(response.content)["error"]
    assert error["code"] == -32602
    assert "add" in error["message"]
    if path is not None:
        assert error["data"] == {"tool": "add", "path": path}


async def test_verbatim_schema_validates_2020_12_keywords(async_client):
    ok = await call(async_client, "tools/call", {"name": "schema_2020", "arguments": {"kind": "a", "n": 2}})
    assert ok["result"]["content"][0]["text"] == "kind,n"
    for bad in ({"kind": "a"}, {"kind": "c"}, {"home": {"street": "x"}}, {"extra": 1}, {"kind": "b", "n": 0}):
        response = await post(async_client, request_body("tools/call", {"name": "schema_2020", "arguments": bad}))
        assert json.loads(response.content)["error"]["code"] == -32602, bad


async def test_unknown_tool_is_32602(async_client):
    response = await post(async_client, request_body("tools/call", {"name": "nope"}))
    assert response.status_code == 400
    error = json.loads(response.content)["error"]
    assert error == {"code": -32602, "message": "Unknown tool: nope", "data": {"tool": "nope"}}


async def test_tool_name_must_be_a_string(async_client):
    body = request_body("tools/call", {"name": 5})
    response = await post(async_client, body)
    assert response.status_code == 400
    assert json.loads(response.content)["error"]["code"] == -32602


async def test_ordinary_exception_is_an_is_error_result_and_is_logged(async_client, caplog):
    r = await call(async_client, "tools/call", {"name": "boom"})
    assert_wire(r, "CallToolResultResponse")
    assert r["result"]["isError"] is True
    text = r["result"]["content"][0]["text"]
    assert "RuntimeError" in text and "flux capacitor" in text
    assert "Traceback" not in text
    record = next(rec for rec in caplog.records if rec.name == "django_mcp")
    assert record.exc_info is not None


async def test_tool_error_sends_exactly_its_message(async_client):
    r = await call(async_client, "tools/call", {"name": "refuse"})
    assert r["result"] == {
        "content": [{"type": "text", "text": "Nope: the quota is used up."}],
        "isError": True,
        "resultType": "complete",
        "_meta": r["result"]["_meta"],
    }


async def test_mcp_json_rpc_error_becomes_that_error(async_client):
    response = await post(async_client, request_body("tools/call", {"name": "rpc_error"}, id=11))
    assert response.status_code == 200
    body = json.loads(response.content)
    assert body == {
        "jsonrpc": "2.0",
        "id": 11,
        "error": {"code": -32099, "message": "Custom application error", "data": {"why": "testing"}},
    }


async def test_missing_client_capability_is_400_32021(async_client):
    response = await post(async_client, request_body("tools/call", {"name": "needs_sampling"}))
    assert response.status_code == 400
    body = json.loads(response.content)
    assert_wire(body, "MissingRequiredClientCapabilityError")
    assert body["error"]["data"] == {"requiredCapabilities": {"sampling": {}}}
    ok = await call(
        async_client, "tools/call", {"name": "needs_sampling"}, meta_extra={"capabilities": {"sampling": {}}}
    )
    assert ok["result"]["content"][0]["text"] == "sampled"


async def test_structured_content_is_validated_and_serialised(async_client):
    r = await call(async_client, "tools/call", {"name": "stats", "arguments": {"count": 3}})
    assert r["result"]["structuredContent"] == {"count": 3}
    assert json.loads(r["result"]["content"][0]["text"]) == {"count": 3}


async def test_structured_content_not_matching_output_schema_is_32603(async_client):
    response = await post(async_client, request_body("tools/call", {"name": "bad_stats"}))
    assert response.status_code == 200
    error = json.loads(response.content)["error"]
    assert error["code"] == -32603
    assert "outputSchema" in error["message"] and "/count" in error["message"]


async def test_every_content_block_type(async_client):
    r = await call(async_client, "tools/call", {"name": "all_content"})
    assert_wire(r, "CallToolResultResponse")
    types = [block["type"] for block in r["result"]["content"]]
    assert types == ["text", "image", "audio", "resource_link", "resource"]
    assert base64.b64decode(r["result"]["content"][1]["data"]).startswith(b"\x89PNG")


class TestParamHeaders:
    body = request_body("tools/call", {"name": "routed", "arguments": {"region": "eu-west", "limit": 5, "dry": True}})

    async def test_matching_param_headers_are_accepted(self, async_client):
        hdrs = {"Mcp-Param-Region": "eu-west", "Mcp-Param-Limit": "5", "Mcp-Param-Dry": "true"}
        response = await post(async_client, self.body, headers=hdrs)
        assert response.status_code == 200, response.content
        assert json.loads(response.content)["result"]["content"][0]["text"] == "eu-west:5:True"

    async def test_base64_param_header_is_decoded(self, async_client):
        body = request_body("tools/call", {"name": "routed", "arguments": {"region": "zürich"}})
        encoded = "=?base64?" + base64.b64encode("zürich".encode()).decode() + "?="
        response = await post(async_client, body, headers={"Mcp-Param-Region": encoded})
        assert response.status_code == 200, response.content

    @pytest.mark.parametrize(
        "hdrs",
        [
            {"Mcp-Param-Limit": "5", "Mcp-Param-Dry": "true"},
            {"Mcp-Param-Region": "us-east", "Mcp-Param-Limit": "5", "Mcp-Param-Dry": "true"},
            {"Mcp-Param-Region": "eu-west", "Mcp-Param-Limit": "6", "Mcp-Param-Dry": "true"},
            {"Mcp-Param-Region": "eu-west", "Mcp-Param-Limit": "5", "Mcp-Param-Dry": "yes"},
            {"Mcp-Param-Region": "=?base64?ZXUtd2VzdA?=", "Mcp-Param-Limit": "5", "Mcp-Param-Dry": "true"},
        ],
    )
    async def test_param_header_problems_are_400_32020(self, async_client, hdrs):
        response = await post(async_client, self.body, headers=hdrs)
        assert response.status_code == 400
        assert json.loads(response.content)["error"]["code"] == -32020
