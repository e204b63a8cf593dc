"""The HTTP face of the validation ladder, through the real URLconf (statuses, codes, ids)."""

import asyncio
import json

import pytest
from django.http import HttpResponse
from django.test import override_settings

from tests.wire import assert_wire, call, post, request_body


def _error(response):
    body = json.loads(response.content)
    assert_wire(body, "JSONRPCErrorResponse")
    return body


@pytest.mark.parametrize("method", ["get", "delete", "put", "patch"])
async def test_other_http_methods_without_a_session_are_405(async_client, method):
    response = await getattr(async_client, method)("/mcp/")
    assert response.status_code == 405
    assert response["Allow"] == "GET, POST, DELETE"  # GET and DELETE serve handshake-era sessions


@pytest.mark.parametrize("method", ["get", "delete"])
async def test_a_modern_only_server_allows_post_only(async_client, settings, method):
    settings.DJANGO_MCP = {**settings.DJANGO_MCP, "PROTOCOL_VERSIONS": ["2026-07-28"]}
    response = await getattr(async_client, method)("/mcp/", headers={"Mcp-Session-Id": "x"})
    assert (response.status_code, response["Allow"]) == (405, "POST")


async def test_options_says_what_the_endpoint_takes_without_granting_another_origin_anything(async_client):
    # A preflight reaches the view only where nothing (django-cors-headers) answers it first: a 204
    # with no Access-Control-* header, which a browser reads as "no", not an HTML 405 page.
    response = await async_client.options(
        "/mcp", headers={"Origin": "http://127.0.0.1:9", "Access-Control-Request-Method": "POST"}
    )
    assert (response.status_code, response["Allow"]) == (204, "GET, POST, DELETE, OPTIONS")
    assert not [name for name in response.headers if name.lower().startswith("access-control-")]
    assert response.content == b""


async def test_no_session_id_is_minted_or_echoed(async_client):
    response = await post(async_client, request_body("server/discover"), headers={"Mcp-Session-Id": "abc"})
    assert response.status_code == 200
    assert "Mcp-Session-Id" not in response


async def test_notification_is_accepted_with_202_and_no_body(async_client):
    response = await post(async_client, {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {}})
    assert response.status_code == 202
    assert response.content == b""


async def test_foreign_origin_is_403(async_client):
    response = await post(async_client, request_body("server/discover"), headers={"Origin": "https://evil.example"})
    assert response.status_code == 403
    assert _error(response)["error"]["code"] == -32600


async def test_same_origin_is_allowed(async_client):
    response = await post(async_client, request_body("server/discover"), headers={"Origin": "http://testserver"})
    assert response.status_code == 200


@override_settings(DJANGO_MCP={"ALLOWED_ORIGINS": ["https://app.example"]})
async def test_listed_origin_is_allowed(async_client):
    ok = await post(async_client, request_body("server/discover"), headers={"Origin": "https://app.example"})
    assert ok.status_code == 200
    other = await post(async_client, request_body("server/discover"), headers={"Origin": "https://app2.example"})
    assert other.status_code == 403


async def test_loopback_origin_only_allowed_under_debug(async_client, settings):
    body = request_body("server/discover")
    assert (await post(async_client, body, headers={"Origin": "http://localhost:3000"})).status_code == 403
    settings.DEBUG = True
    assert (await post(async_client, body, headers={"Origin": "http://localhost:3000"})).status_code == 200
    assert (await post(async_client, body, headers={"Origin": "http://evil.example"})).status_code == 403


async def test_disallowed_host_is_400(async_client):
    response = await post(async_client, request_body("server/discover"), headers={"Host": "evil.example.com"})
    assert response.status_code == 400


async def test_wrong_content_type_is_415(async_client):
    response = await post(async_client, request_body("server/discover"), headers={"Content-Type": "text/plain"})
    assert response.status_code == 415
    assert "id" not in _error(response)


@pytest.mark.parametrize(
    "accept,status",
    [
        ("application/json", 406),
        ("text/event-stream", 406),
        ("text/html", 406),
        ("application/json, text/event-stream", 200),
        ("*/*", 200),
        ("application/*, text/*", 200),
        ("application/json;q=0.9, text/event-stream;q=0.8", 200),
    ],
)
async def test_accept_must_cover_json_and_sse(async_client, accept, status):
    response = await post(async_client, request_body("server/discover"), headers={"Accept": accept})
    assert response.status_code == status


async def test_missing_accept_is_tolerated(async_client):
    response = await post(async_client, request_body("server/discover"), drop=("Accept",))
    assert response.status_code == 200


async def test_parse_error_is_400_32700_with_null_id(async_client):
    response = await post(async_client, b'{"jsonrpc": "2.0", "id": 1,')
    assert response.status_code == 400
    body = _error(response)
    assert body["error"]["code"] == -32700
    assert "id" not in body  # unreadable: omitted (the schema forbids null)


@pytest.mark.parametrize(
    "payload,fragment",
    [
        ([{"jsonrpc": "2.0", "id": 1, "method": "server/discover"}], "Batch"),
        ({"jsonrpc": "2.0", "id": 1, "result": {}}, "responses"),
        ({"jsonrpc": "1.0", "id": 1, "method": "server/discover"}, "jsonrpc"),
        ({"id": 1, "method": "server/discover"}, "jsonrpc"),
        ({"jsonrpc": "2.0", "id": None, "method": "server/discover"}, "null"),
        ({"jsonrpc": "2.0", "id": True, "method": "server/discover"}, "id"),
        ({"jsonrpc": "2.0", "id": 1, "method": 7}, "method"),
        ({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": [1]}, "params"),
        ("just a string", "object"),
    ],
)
async def test_invalid_envelope_is_400_32600(async_client, payload, fragment):
    response = await post(async_client, json.dumps(payload))
    assert response.status_code == 400
    body = _error(response)
    assert body["error"]["code"] == -32600
    assert fragment in body["error"]["message"]


async def test_invalid_envelope_echoes_a_readable_id(async_client):
    response = await post(async_client, json.dumps({"jsonrpc": "2.0", "id": "abc", "method": 7}))
    assert _error(response)["id"] == "abc"


@pytest.mark.parametrize(
    "params",
    [
        {},
        {"_meta": {"io.modelcontextprotocol/clientCapabilities": {}}},
        {"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}},
        {"_meta": "nope"},
    ],
)
async def test_missing_meta_fields_are_400_32602(async_client, params):
    body = {"jsonrpc": "2.0", "id": 7, "method": "server/discover", "params": params}
    response = await post(async_client, body)
    assert response.status_code == 400
    error = _error(response)
    assert error["error"]["code"] == -32602
    assert error["id"] == 7


async def test_client_info_is_optional(async_client):
    body = request_body("server/discover")
    del body["params"]["_meta"]["io.modelcontextprotocol/clientInfo"]
    assert (await post(async_client, body)).status_code == 200


async def test_invalid_log_level_is_32602(async_client):
    response = await post(async_client, request_body("server/discover", **{"io.modelcontextprotocol/logLevel": "loud"}))
    assert response.status_code == 400
    assert _error(response)["error"]["code"] == -32602


@pytest.mark.parametrize(
    "headers,drop,header",
    [
        ({}, ("MCP-Protocol-Version",), "MCP-Protocol-Version"),
        ({"MCP-Protocol-Version": "2025-11-25"}, (), "MCP-Protocol-Version"),
        ({}, ("Mcp-Method",), "Mcp-Method"),
        ({"Mcp-Method": "tools/list"}, (), "Mcp-Method"),
        ({"Mcp-Method": "SERVER/DISCOVER"}, (), "Mcp-Method"),
    ],
)
async def test_routing_header_problems_are_400_32020(async_client, headers, drop, header):
    response = await post(async_client, request_body("server/discover", id="r1"), headers=headers, drop=drop)
    assert response.status_code == 400
    body = _error(response)
    assert body["error"]["code"] == -32020
    assert body["error"]["data"] == {"header": header}
    assert body["id"] == "r1"


async def test_header_names_are_case_insensitive_and_values_trimmed(async_client):
    body = request_body("tools/call", {"name": "add", "arguments": {"a": 1}})
    response = await post(
        async_client,
        body,
        headers={"mcp-method": " tools/call\t", "MCP-NAME": "  add ", "mcp-protocol-version": "2026-07-28"},
        drop=("Mcp-Method", "Mcp-Name", "MCP-Protocol-Version"),
    )
    assert response.status_code == 200, response.content


@pytest.mark.parametrize(
    "name_header",
    [None, "subtract", "=?base64?c3VidHJhY3Q=?=", "=?base64?not base64?="],
)
async def test_mcp_name_must_match_tool_name(async_client, name_header):
    body = request_body("tools/call", {"name": "add", "arguments": {"a": 1}})
    headers = {} if name_header is None else {"Mcp-Name": name_header}
    response = await post(async_client, body, headers=headers, drop=("Mcp-Name",) if name_header is None else ())
    assert response.status_code == 400
    assert _error(response)["error"]["code"] == -32020


async def test_mcp_name_base64_sentinel_is_decoded(async_client):
    body = request_body("tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}})
    response = await post(async_client, body, headers={"Mcp-Name": "=?base64?YWRk?="})
    assert response.status_code == 200
    assert json.loads(response.content)["result"]["content"][0]["text"] == "5"


async def test_unsupported_version_is_400_32022_with_data(async_client):
    body = request_body("server/discover", id=3)
    body["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = "v999.0.0"
    response = await post(async_client, body, headers={"MCP-Protocol-Version": "v999.0.0"})
    assert response.status_code == 400
    error = _error(response)
    assert_wire(error, "UnsupportedProtocolVersionError")
    assert error["error"]["code"] == -32022
    assert error["error"]["data"] == {"supported": ["2026-07-28"], "requested": "v999.0.0"}
    assert error["id"] == 3


async def test_version_mismatch_between_header_and_body_is_32020(async_client):
    body = request_body("server/discover")
    body["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = "v999.0.0"
    response = await post(async_client, body)
    assert response.status_code == 400
    assert _error(response)["error"]["code"] == -32020


async def test_legacy_initialize_on_a_modern_only_server_is_told_the_supported_versions(async_client, settings):
    settings.DJANGO_MCP = {**settings.DJANGO_MCP, "PROTOCOL_VERSIONS": ["2026-07-28"]}
    body = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25"}}
    response = await post(async_client, body, headers={"MCP-Protocol-Version": "2025-11-25"})
    assert response.status_code == 400
    error = _error(response)["error"]
    assert error["code"] == -32022
    assert error["data"] == {"supported": ["2026-07-28"], "requested": "2025-11-25"}


@pytest.mark.parametrize(
    "method",
    [
        "initialize",
        "ping",
        "logging/setLevel",
        "resources/subscribe",
        "resources/unsubscribe",
        "tasks/result",
        "tasks/list",
        "tasks/get",
        "unknown/method",
    ],
)
async def test_unknown_and_removed_methods_are_404_32601(async_client, method):
    response = await post(async_client, request_body(method, id=f"m-{method}"))
    assert response.status_code == 404
    body = _error(response)
    assert body["error"]["code"] == -32601
    assert body["id"] == f"m-{method}"


async def test_body_over_the_limit_is_413(async_client, settings):
    settings.DJANGO_MCP = {**settings.DJANGO_MCP, "MAX_REQUEST_BYTES": 1000}
    body = request_body("tools/call", {"name": "async_echo", "arguments": {"text": "x" * 2000}})
    response = await post(async_client, body)
    assert response.status_code == 413
    assert _error(response)["error"]["code"] == -32600
    small = await call(async_client, "tools/call", {"name": "async_echo", "arguments": {"text": "ok"}})
    assert small["result"]["content"][0]["text"] == "ok"


async def test_error_responses_validate_against_the_schema(async_client):
    response = await post(async_client, request_body("tools/call", {"name": "nope"}))
    assert_wire(json.loads(response.content), "JSONRPCErrorResponse")


async def test_a_request_builds_one_response(async_client, monkeypatch):
    """Ninja's scratch response (never read: the view returns its own) is not built per request."""
    built = []
    init = HttpResponse.__init__

    def counting_init(self, *args, **kwargs):
        built.append(self)
        init(self, *args, **kwargs)

    monkeypatch.setattr(HttpResponse, "__init__", counting_init)
    response = await post(async_client, request_body("tools/call", {"name": "async_echo", "arguments": {"text": "a"}}))
    assert json.loads(response.content)["result"]["content"][0]["text"] == "a"
    assert built == [response]
    built.clear()
    refused = await post(async_client, request_body("tools/call", {"name": "nope"}))
    assert refused.status_code == 400
    assert _error(refused)["error"]["code"] == -32602
    assert built == [refused]


async def test_a_loops_task_factory_still_makes_the_requests_task(async_client):
    """Eager start (3.12+) is skipped when the loop has a task factory: tracing and monitoring see the work."""
    loop = asyncio.get_running_loop()
    made = []

    def factory(loop, coro, **kwargs):
        made.append(coro.__qualname__)
        return asyncio.Task(coro, loop=loop, **kwargs)

    loop.set_task_factory(factory)
    try:
        response = await post(
            async_client, request_body("tools/call", {"name": "async_echo", "arguments": {"text": "a"}})
        )
    finally:
        loop.set_task_factory(None)
    assert json.loads(response.content)["result"]["content"][0]["text"] == "a"
    assert "_aoutcome" in made


async def test_a_handshake_only_server_refuses_a_2026_request_and_follows_a_settings_change(async_client, settings):
    settings.DJANGO_MCP = {**settings.DJANGO_MCP, "PROTOCOL_VERSIONS": ["2025-11-25"]}
    response = await post(async_client, request_body("server/discover", id=4))
    assert response.status_code == 400
    error = _error(response)["error"]
    assert error["code"] == -32022
    # Named so that the client knows to fall back to initialize (wire-reference §6.2: SHOULD name them).
    assert error["data"] == {"supported": ["2025-11-25"], "requested": "2026-07-28"}
    settings.DJANGO_MCP = {**settings.DJANGO_MCP, "PROTOCOL_VERSIONS": ["2026-07-28", "2025-11-25"]}
    assert (await call(async_client, "server/discover"))["result"]["resultType"] == "complete"


async def test_a_handler_that_fails_unexpectedly_is_32603_internal_error_and_logged(async_client, monkeypatch, caplog):
    """A bug in a method's handler never becomes a 500 or leaks its text: -32603 in band, the traceback logged."""
    from django_mcp.server import dispatch

    async def broken(*args, **kwargs):
        raise RuntimeError("secret detail of a bug")

    listed = dispatch.CORE_METHODS["tools/list"]
    monkeypatch.setitem(
        dispatch.CORE_METHODS, "tools/list", dispatch.CoreMethod(broken, listed.params_model, listed.capability)
    )
    answer = await call(async_client, "tools/list")
    assert answer["error"] == {"code": -32603, "message": "Internal error"}
    assert "Internal error serving tools/list" in caplog.text and "secret detail of a bug" in caplog.text
