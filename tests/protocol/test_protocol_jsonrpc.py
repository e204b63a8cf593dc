"""Unit tests for django_mcp.protocol.errors and django_mcp.protocol.jsonrpc (pure, no Django, no DB)."""

from __future__ import annotations

import json

import pytest

from django_mcp.protocol import errors
from django_mcp.protocol.errors import (
    McpJsonRpcError,
    header_mismatch,
    invalid_params,
    method_not_found,
    missing_capability,
)
from django_mcp.protocol.jsonrpc import (
    META_CLIENT_CAPABILITIES,
    META_CLIENT_INFO,
    META_LOG_LEVEL,
    META_PROTOCOL_VERSION,
    Message,
    dumps,
    error_response,
    notification,
    parse_json,
    parse_message,
    parse_meta,
    readable_id,
    result_response,
)


def _meta(**extra):
    meta = {META_PROTOCOL_VERSION: "2026-07-28", META_CLIENT_CAPABILITIES: {}}
    meta.update(extra)
    return meta


# --------------------------------------------------------------------------- errors.py


class TestErrorCodes:
    def test_code_constants_match_the_spec(self):
        assert errors.PARSE_ERROR == -32700
        assert errors.INVALID_REQUEST == -32600
        assert errors.METHOD_NOT_FOUND == -32601
        assert errors.INVALID_PARAMS == -32602
        assert errors.INTERNAL_ERROR == -32603
        assert errors.HEADER_MISMATCH == -32020
        assert errors.MISSING_CLIENT_CAPABILITY == -32021
        assert errors.UNSUPPORTED_PROTOCOL_VERSION == -32022

    def test_http_status_by_code(self):
        expected = {
            -32700: 400,
            -32600: 400,
            -32601: 404,
            -32602: 400,
            -32020: 400,
            -32021: 400,
            -32022: 400,
            # in-band errors travel on a 200
            -32603: 200,
            -32000: 200,
            -32001: 200,
            1: 200,
        }
        actual = {code: McpJsonRpcError(code, "m").http_status for code in expected}
        assert actual == expected

    def test_explicit_http_status_overrides_the_table(self):
        err = McpJsonRpcError(-32600, "Origin not allowed", http_status=403)
        assert err.http_status == 403
        assert err.code == -32600

    def test_explicit_http_status_on_an_in_band_code(self):
        assert McpJsonRpcError(-32603, "x", http_status=503).http_status == 503


class TestMcpJsonRpcError:
    def test_attributes_and_str(self):
        err = McpJsonRpcError(-32602, "Bad thing", {"path": "/a"})
        assert err.code == -32602
        assert err.message == "Bad thing"
        assert err.data == {"path": "/a"}
        assert str(err) == "Bad thing"
        assert isinstance(err, Exception)

    def test_to_error_omits_data_when_none(self):
        assert McpJsonRpcError(-32603, "Internal error").to_error() == {"code": -32603, "message": "Internal error"}

    @pytest.mark.parametrize("data", [{}, [], 0, "", False])
    def test_to_error_keeps_falsy_data(self, data):
        error = McpJsonRpcError(-32000, "m", data).to_error()
        assert "data" in error
        assert error["data"] == data
        assert type(error["data"]) is type(data)

    def test_to_error_with_data(self):
        assert McpJsonRpcError(-32602, "m", {"k": [1, 2]}).to_error() == {
            "code": -32602,
            "message": "m",
            "data": {"k": [1, 2]},
        }

    def test_repr(self):
        assert repr(McpJsonRpcError(-32602, "oops", {"a": 1})) == "McpJsonRpcError(-32602, 'oops', data={'a': 1})"

    def test_can_be_raised_and_caught(self):
        with pytest.raises(McpJsonRpcError) as info:
            raise McpJsonRpcError(-32001, "app error", http_status=409)
        assert info.value.code == -32001
        assert info.value.http_status == 409


class TestErrorHelpers:
    def test_missing_capability_default_message(self):
        err = missing_capability({"elicitation": {}})
        assert err.code == -32021
        assert err.message == "Missing required client capability"
        assert err.data == {"requiredCapabilities": {"elicitation": {}}}
        assert err.http_status == 400

    def test_missing_capability_custom_message(self):
        err = missing_capability({"extensions": {"io.modelcontextprotocol/tasks": {}}}, "Declare the tasks extension")
        assert err.message == "Declare the tasks extension"
        assert err.data == {"requiredCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}}

    def test_method_not_found(self):
        err = method_not_found("tasks/list")
        assert err.code == -32601
        assert err.message == "Method not found: tasks/list"
        assert err.data == {"method": "tasks/list"}
        assert err.http_status == 404

    def test_invalid_params_without_data(self):
        err = invalid_params("Unknown tool: nope")
        assert err.code == -32602
        assert err.message == "Unknown tool: nope"
        assert err.data is None
        assert err.http_status == 400
        assert err.to_error() == {"code": -32602, "message": "Unknown tool: nope"}

    def test_invalid_params_with_data(self):
        err = invalid_params("bad", {"path": "/x"})
        assert err.to_error() == {"code": -32602, "message": "bad", "data": {"path": "/x"}}

    def test_header_mismatch(self):
        err = header_mismatch("Header Mcp-Name does not match", "Mcp-Name")
        assert err.code == -32020
        assert err.message == "Header Mcp-Name does not match"
        assert err.data == {"header": "Mcp-Name"}
        assert err.http_status == 400


# --------------------------------------------------------------------------- parse_json


class TestParseJson:
    @pytest.mark.parametrize(
        ("body", "expected"),
        [
            (b'{"a": 1}', {"a": 1}),
            (b"[1, 2]", [1, 2]),
            (b"null", None),
            (b"42", 42),
            ('{"t": "caf\u00e9"}'.encode(), {"t": "caf\u00e9"}),
        ],
    )
    def test_valid_json(self, body, expected):
        assert parse_json(body) == expected

    @pytest.mark.parametrize("body", [b"", b"{", b"{'a': 1}", b'{"a": 1,}', b"\xff\xfe\x00", b"nope", b'{"a": 1} x'])
    def test_invalid_json_is_parse_error(self, body):
        with pytest.raises(McpJsonRpcError) as info:
            parse_json(body)
        assert info.value.code == -32700
        assert info.value.http_status == 400
        assert info.value.message.startswith("Parse error: ")
        assert info.value.data is None

    def test_invalid_utf8_is_parse_error_not_unicode_error(self):
        with pytest.raises(McpJsonRpcError) as info:
            parse_json(b'{"a": "\xff"}')
        assert info.value.code == -32700
        assert "utf-8" in info.value.message


# --------------------------------------------------------------------------- parse_message


class TestParseMessage:
    def test_request_with_integer_id(self):
        msg = parse_message({"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": {"_meta": _meta()}})
        assert msg == Message(method="tools/list", params={"_meta": _meta()}, id=7, is_notification=False)

    def test_request_with_string_id(self):
        msg = parse_message({"jsonrpc": "2.0", "id": "abc", "method": "server/discover"})
        assert msg.id == "abc"
        assert msg.is_notification is False
        assert msg.params == {}

    def test_id_zero_is_a_request_not_a_notification(self):
        msg = parse_message({"jsonrpc": "2.0", "id": 0, "method": "ping"})
        assert msg.id == 0
        assert msg.is_notification is False

    def test_empty_string_id_is_a_request(self):
        msg = parse_message({"jsonrpc": "2.0", "id": "", "method": "ping"})
        assert msg.id == ""
        assert msg.is_notification is False

    def test_notification_has_no_id(self):
        msg = parse_message({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}})
        assert msg.is_notification is True
        assert msg.id is None
        assert msg.method == "notifications/cancelled"
        assert msg.params == {"requestId": 1}

    def test_params_null_is_treated_as_empty(self):
        msg = parse_message({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": None})
        assert msg.params == {}

    def test_extra_envelope_members_are_tolerated(self):
        msg = parse_message({"jsonrpc": "2.0", "id": 1, "method": "ping", "x-extra": True})
        assert msg.method == "ping"

    def test_batch_is_rejected(self):
        with pytest.raises(McpJsonRpcError) as info:
            parse_message([{"jsonrpc": "2.0", "id": 1, "method": "ping"}])
        assert info.value.code == -32600
        assert info.value.http_status == 400
        assert "Batch requests are not supported" in info.value.message

    def test_empty_batch_is_rejected_as_batch(self):
        with pytest.raises(McpJsonRpcError) as info:
            parse_message([])
        assert info.value.code == -32600
        assert "Batch" in info.value.message

    @pytest.mark.parametrize("obj", [None, 42, "ping", True, 1.5])
    def test_non_object_body(self, obj):
        with pytest.raises(McpJsonRpcError) as info:
            parse_message(obj)
        assert info.value.code == -32600
        assert info.value.message == "Invalid request: the body must be a JSON-RPC request object"

    @pytest.mark.parametrize(
        "obj",
        [
            {"jsonrpc": "2.0", "id": 1, "result": {}},
            {"jsonrpc": "2.0", "id": 1, "error": {"code": -32603, "message": "x"}},
            {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "x"}},
        ],
    )
    def test_posted_response_is_rejected(self, obj):
        with pytest.raises(McpJsonRpcError) as info:
            parse_message(obj)
        assert info.value.code == -32600
        assert info.value.message == "Invalid request: clients must not post JSON-RPC responses"

    def test_null_id_is_rejected(self):
        with pytest.raises(McpJsonRpcError) as info:
            parse_message({"jsonrpc": "2.0", "id": None, "method": "ping"})
        assert info.value.code == -32600
        assert info.value.message == "Invalid request: id must be a string or an integer, not null"

    @pytest.mark.parametrize("bad_id", [True, False, 1.0, 1.5, [1], {"a": 1}])
    def test_non_string_non_integer_id_is_rejected(self, bad_id):
        with pytest.raises(McpJsonRpcError) as info:
            parse_message({"jsonrpc": "2.0", "id": bad_id, "method": "ping"})
        assert info.value.code == -32600
        assert info.value.message.startswith("Invalid request: id")

    def test_missing_jsonrpc(self):
        with pytest.raises(McpJsonRpcError) as info:
            parse_message({"id": 1, "method": "ping"})
        assert info.value.code == -32600
        assert info.value.message == "Invalid request: jsonrpc: Field required"

    @pytest.mark.parametrize("version", ["1.0", "2", 2.0, None])
    def test_wrong_jsonrpc_version(self, version):
        with pytest.raises(McpJsonRpcError) as info:
            parse_message({"jsonrpc": version, "id": 1, "method": "ping"})
        assert info.value.code == -32600
        assert info.value.message.startswith("Invalid request: jsonrpc: ")

    def test_missing_method(self):
        with pytest.raises(McpJsonRpcError) as info:
            parse_message({"jsonrpc": "2.0", "id": 1})
        assert info.value.code == -32600
        assert info.value.message == "Invalid request: method: Field required"

    @pytest.mark.parametrize("method", [5, None, ["ping"]])
    def test_non_string_method(self, method):
        with pytest.raises(McpJsonRpcError) as info:
            parse_message({"jsonrpc": "2.0", "id": 1, "method": method})
        assert info.value.code == -32600
        assert info.value.message.startswith("Invalid request: method: ")

    @pytest.mark.parametrize("params", [[1, 2], "x", 3, True])
    def test_params_not_an_object(self, params):
        with pytest.raises(McpJsonRpcError) as info:
            parse_message({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": params})
        assert info.value.code == -32600
        assert info.value.message.startswith("Invalid request: params: ")

    def test_message_is_frozen(self):
        msg = parse_message({"jsonrpc": "2.0", "id": 1, "method": "ping"})
        with pytest.raises(AttributeError):
            msg.method = "other"  # type: ignore[misc]


# --------------------------------------------------------------------------- parse_meta


class TestParseMeta:
    def test_minimal_meta(self):
        meta = parse_meta({"_meta": _meta()})
        assert meta.protocol_version == "2026-07-28"
        assert meta.client_capabilities == {}
        assert meta.client_info is None
        assert meta.log_level is None
        assert meta.progress_token is None

    def test_full_meta(self):
        meta = parse_meta(
            {
                "_meta": _meta(
                    **{
                        META_CLIENT_INFO: {"name": "c", "version": "1"},
                        META_LOG_LEVEL: "warning",
                        "progressToken": "p1",
                        META_CLIENT_CAPABILITIES: {"elicitation": {"form": {}}},
                    }
                )
            }
        )
        assert meta.client_capabilities == {"elicitation": {"form": {}}}
        assert meta.client_info == {"name": "c", "version": "1"}
        assert meta.log_level == "warning"
        assert meta.progress_token == "p1"

    def test_integer_progress_token(self):
        assert parse_meta({"_meta": _meta(progressToken=12)}).progress_token == 12

    def test_unknown_meta_keys_are_kept(self):
        meta = parse_meta({"_meta": _meta(traceparent="00-abc-def-01")})
        assert meta.model_extra == {"traceparent": "00-abc-def-01"}

    @pytest.mark.parametrize("params", [{}, {"_meta": None}, {"_meta": []}, {"_meta": "x"}, {"name": "t"}])
    def test_missing_meta(self, params):
        with pytest.raises(McpJsonRpcError) as info:
            parse_meta(params)
        err = info.value
        assert err.code == -32602
        assert err.http_status == 400
        assert err.message.startswith("Invalid params: params._meta is required")
        assert META_PROTOCOL_VERSION in err.message
        assert META_CLIENT_CAPABILITIES in err.message

    def test_missing_protocol_version(self):
        with pytest.raises(McpJsonRpcError) as info:
            parse_meta({"_meta": {META_CLIENT_CAPABILITIES: {}}})
        assert info.value.code == -32602
        assert info.value.http_status == 400
        assert info.value.message == f"Invalid params._meta: {META_PROTOCOL_VERSION}: Field required"

    def test_missing_client_capabilities(self):
        with pytest.raises(McpJsonRpcError) as info:
            parse_meta({"_meta": {META_PROTOCOL_VERSION: "2026-07-28"}})
        assert info.value.code == -32602
        assert info.value.message == f"Invalid params._meta: {META_CLIENT_CAPABILITIES}: Field required"

    def test_empty_meta_names_both_fields(self):
        with pytest.raises(McpJsonRpcError) as info:
            parse_meta({"_meta": {}})
        assert info.value.code == -32602
        assert META_PROTOCOL_VERSION in info.value.message
        assert META_CLIENT_CAPABILITIES in info.value.message

    @pytest.mark.parametrize("version", [20260728, None, ["2026-07-28"]])
    def test_protocol_version_must_be_a_string(self, version):
        with pytest.raises(McpJsonRpcError) as info:
            parse_meta({"_meta": _meta(**{META_PROTOCOL_VERSION: version})})
        assert info.value.code == -32602
        assert META_PROTOCOL_VERSION in info.value.message

    @pytest.mark.parametrize("caps", [None, [], "all", 1])
    def test_client_capabilities_must_be_an_object(self, caps):
        with pytest.raises(McpJsonRpcError) as info:
            parse_meta({"_meta": _meta(**{META_CLIENT_CAPABILITIES: caps})})
        assert info.value.code == -32602
        assert META_CLIENT_CAPABILITIES in info.value.message

    def test_valid_log_levels(self):
        levels = ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]
        assert [parse_meta({"_meta": _meta(**{META_LOG_LEVEL: lv})}).log_level for lv in levels] == levels

    @pytest.mark.parametrize("level", ["verbose", "WARNING", "warn", "", 3])
    def test_invalid_log_level(self, level):
        with pytest.raises(McpJsonRpcError) as info:
            parse_meta({"_meta": _meta(**{META_LOG_LEVEL: level})})
        assert info.value.code == -32602
        assert info.value.http_status == 400
        assert info.value.message.startswith(f"Invalid params._meta: {META_LOG_LEVEL}: ")

    @pytest.mark.parametrize("token", [True, 1.5, [1], {"a": 1}])
    def test_invalid_progress_token(self, token):
        with pytest.raises(McpJsonRpcError) as info:
            parse_meta({"_meta": _meta(progressToken=token)})
        assert info.value.code == -32602
        assert "progressToken" in info.value.message


# --------------------------------------------------------------------------- readable_id


class TestReadableId:
    CASES = [
        ({"id": 5}, 5),
        ({"id": 0}, 0),
        ({"id": -3}, -3),
        ({"id": "req-1"}, "req-1"),
        ({"id": ""}, ""),
        ({"id": None}, None),
        ({"id": True}, None),
        ({"id": False}, None),
        ({"id": 1.0}, None),
        ({"id": [1]}, None),
        ({}, None),
        ([{"id": 1}], None),
        ("x", None),
        (None, None),
    ]

    def test_readable_id(self):
        for obj, expected in self.CASES:
            rid = readable_id(obj)
            assert (rid, type(rid)) == (expected, type(expected)), obj


# --------------------------------------------------------------------------- response builders


class TestResponses:
    def test_result_response(self):
        assert result_response(3, {"resultType": "complete"}) == {
            "jsonrpc": "2.0",
            "id": 3,
            "result": {"resultType": "complete"},
        }

    def test_error_response_with_id_and_data(self):
        err = McpJsonRpcError(-32602, "bad", {"path": "/a"})
        assert error_response("r1", err) == {
            "jsonrpc": "2.0",
            "id": "r1",
            "error": {"code": -32602, "message": "bad", "data": {"path": "/a"}},
        }

    def test_error_response_with_unreadable_id_omits_id(self):
        # The 2026-07-28 schema types JSONRPCErrorResponse.id as optional, never null.
        resp = error_response(None, McpJsonRpcError(-32700, "Parse error: x"))
        assert resp == {"jsonrpc": "2.0", "error": {"code": -32700, "message": "Parse error: x"}}
        assert "id" not in resp

    @pytest.mark.parametrize("rid", [0, ""])
    def test_error_response_keeps_falsy_ids(self, rid):
        resp = error_response(rid, McpJsonRpcError(-32602, "bad"))
        assert resp["id"] == rid
        assert type(resp["id"]) is type(rid)

    def test_notification(self):
        assert notification("notifications/progress", {"progressToken": "p", "progress": 1}) == {
            "jsonrpc": "2.0",
            "method": "notifications/progress",
            "params": {"progressToken": "p", "progress": 1},
        }
        assert "id" not in notification("n", {})

    def test_dumps_is_compact_and_keeps_unicode(self):
        assert dumps({"a": "caf\u00e9 \u2615", "b": [1, 2], "c": None}) == '{"a":"caf\u00e9 \u2615","b":[1,2],"c":null}'

    def test_dumps_is_one_line(self):
        out = dumps({"text": "line1\nline2"})
        assert "\n" not in out
        assert out == '{"text":"line1\\nline2"}'
        assert json.loads(out) == {"text": "line1\nline2"}

    def test_dumps_round_trips_an_error_response(self):
        resp = error_response(9, McpJsonRpcError(-32601, "Method not found: x", {"method": "x"}))
        assert dumps(resp) == (
            '{"jsonrpc":"2.0","id":9,"error":{"code":-32601,"message":"Method not found: x","data":{"method":"x"}}}'
        )
