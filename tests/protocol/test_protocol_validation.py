"""Unit tests for django_mcp.protocol.validation: each rung alone, then ``admit()``'s ordering (wire-reference §1.4)."""

from __future__ import annotations

import base64
import json

import pytest

from django_mcp.protocol.errors import McpJsonRpcError
from django_mcp.protocol.jsonrpc import META_CLIENT_CAPABILITIES, META_PROTOCOL_VERSION, Message, RequestMeta
from django_mcp.protocol.validation import (
    PROTOCOL_VERSION,
    SUPPORTED_VERSIONS,
    Admitted,
    Rejection,
    admit,
    check_handshake_initialize,
    check_media_types,
    check_origin,
    check_routing_headers,
    check_version,
    unsupported_version,
)

JSON = "application/json"
BOTH = "application/json, text/event-stream"
NAME_PARAMS = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri", "tasks/get": "taskId"}


def b64(text: str) -> str:
    return "=?base64?" + base64.b64encode(text.encode("utf-8")).decode("ascii") + "?="


def meta(version: str = PROTOCOL_VERSION, caps: dict | None = None) -> dict:
    return {META_PROTOCOL_VERSION: version, META_CLIENT_CAPABILITIES: caps if caps is not None else {}}


def request_obj(method="tools/list", rid=1, params=None, version=PROTOCOL_VERSION):
    p = {"_meta": meta(version)}
    p.update(params or {})
    return {"jsonrpc": "2.0", "id": rid, "method": method, "params": p}


def body(obj) -> bytes:
    return json.dumps(obj).encode()


def good_headers(method="tools/list", version=PROTOCOL_VERSION, **extra) -> dict[str, str]:
    headers = {
        "content-type": JSON,
        "accept": BOTH,
        "mcp-protocol-version": version,
        "mcp-method": method,
    }
    headers.update(extra)
    return headers


def run_admit(raw: bytes, headers, *, allowed=lambda origin: True, supported=SUPPORTED_VERSIONS):
    return admit(raw, headers, origin_allowed=allowed, name_params=NAME_PARAMS, supported=supported)


def reject(raw: bytes, headers, **kwargs) -> Rejection:
    with pytest.raises(Rejection) as info:
        run_admit(raw, headers, **kwargs)
    return info.value


def _message(method="tools/call", params=None, rid=1) -> Message:
    return Message(method=method, params=params or {}, id=rid)


def _meta_model(version=PROTOCOL_VERSION) -> RequestMeta:
    return RequestMeta.model_validate(meta(version))


# --------------------------------------------------------------------------- constants


def test_protocol_version_constants():
    assert PROTOCOL_VERSION == "2026-07-28"
    assert SUPPORTED_VERSIONS == ("2026-07-28",)


# --------------------------------------------------------------------------- Rejection


class TestRejection:
    def test_carries_error_status_and_id(self):
        err = McpJsonRpcError(-32602, "bad")
        rej = Rejection(err, 5)
        assert rej.error is err
        assert rej.request_id == 5
        assert rej.http_status == 400
        assert str(rej) == "bad"

    def test_default_request_id_is_none(self):
        rej = Rejection(McpJsonRpcError(-32601, "nope"))
        assert rej.request_id is None
        assert rej.http_status == 404


# --------------------------------------------------------------------------- check_origin


class TestCheckOrigin:
    def test_absent_origin_is_not_checked(self):
        calls = []
        check_origin(None, lambda o: calls.append(o) or False)
        assert calls == []

    def test_allowed_origin(self):
        calls = []
        check_origin("https://app.example", lambda o: calls.append(o) or True)
        assert calls == ["https://app.example"]

    @pytest.mark.parametrize("origin", ["https://evil.example", "null", ""])
    def test_refused_origin_is_403(self, origin):
        with pytest.raises(Rejection) as info:
            check_origin(origin, lambda o: False)
        rej = info.value
        assert rej.http_status == 403
        assert rej.error.code == -32600
        assert rej.error.message == f"Origin not allowed: {origin}"
        assert rej.request_id is None


# --------------------------------------------------------------------------- check_media_types


class TestCheckMediaTypes:
    @pytest.mark.parametrize(
        "content_type",
        [
            "application/json",
            "application/json; charset=utf-8",
            "application/json;charset=UTF-8",
            "Application/JSON",
            " application/json ",
        ],
    )
    def test_json_content_type_accepted(self, content_type):
        check_media_types(content_type, BOTH)

    @pytest.mark.parametrize(
        "content_type",
        [
            None,
            "",
            "text/plain",
            "application/x-www-form-urlencoded",
            "application/jsonl",
            "application/json-rpc",
            "text/json",
            "application/json, text/plain",
            "multipart/form-data; boundary=x",
        ],
    )
    def test_other_content_types_are_415(self, content_type):
        with pytest.raises(Rejection) as info:
            check_media_types(content_type, BOTH)
        rej = info.value
        assert rej.http_status == 415
        assert rej.error.code == -32600
        assert rej.error.message == f"Unsupported Content-Type {content_type!r}: send application/json"

    @pytest.mark.parametrize(
        "accept",
        [
            None,  # absent Accept means anything (RFC 9110)
            "application/json, text/event-stream",
            "text/event-stream, application/json",
            "application/json;q=0.9, text/event-stream;q=0.8",
            "APPLICATION/JSON, TEXT/EVENT-STREAM",
            "*/*",
            "text/html, */*;q=0.1",
            "application/*, text/*",
            "application/json, text/*",
            "application/*, text/event-stream",
            "application/json,text/event-stream",
            "application/json , text/event-stream ; charset=utf-8",
        ],
    )
    def test_acceptable(self, accept):
        check_media_types(JSON, accept)

    @pytest.mark.parametrize(
        "accept",
        [
            "application/json",
            "text/event-stream",
            "application/*",
            "text/*",
            "text/html, application/xml",
            "application/json, text/html",
            "image/*, text/event-stream",
        ],
    )
    def test_not_acceptable_is_406(self, accept):
        with pytest.raises(Rejection) as info:
            check_media_types(JSON, accept)
        rej = info.value
        assert rej.http_status == 406
        assert rej.error.code == -32600
        assert rej.error.message == (
            f"Not acceptable: Accept must list both application/json and text/event-stream (got {accept!r})"
        )

    def test_content_type_is_checked_before_accept(self):
        with pytest.raises(Rejection) as info:
            check_media_types("text/plain", "image/png")
        assert info.value.http_status == 415


# ------------------------------------------------------ check_handshake_initialize / unsupported_version


class TestCheckLegacy:
    def test_handshake_initialize_gets_32022(self):
        msg = Message("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}}, id=0)
        with pytest.raises(Rejection) as info:
            check_handshake_initialize(msg)
        rej = info.value
        assert rej.request_id == 0
        assert rej.http_status == 400
        assert rej.error.code == -32022
        assert rej.error.message == "Unsupported protocol version: 2025-06-18"
        assert rej.error.data == {"supported": ["2026-07-28"], "requested": "2025-06-18"}

    def test_initialize_without_protocol_version(self):
        with pytest.raises(Rejection) as info:
            check_handshake_initialize(Message("initialize", {}, id="init"))
        assert info.value.request_id == "init"
        assert info.value.error.data == {"supported": ["2026-07-28"], "requested": None}
        assert info.value.error.message == "Unsupported protocol version: None"

    @pytest.mark.parametrize("requested", [20250618, None, ["2025-06-18"]])
    def test_non_string_requested_version_is_reported_as_null(self, requested):
        with pytest.raises(Rejection) as info:
            check_handshake_initialize(Message("initialize", {"protocolVersion": requested}, id=1))
        assert info.value.error.data["requested"] is None

    def test_initialize_with_meta_is_not_handshake_era(self):
        check_handshake_initialize(Message("initialize", {"_meta": meta()}, id=1))

    @pytest.mark.parametrize("method", ["tools/list", "Initialize", "initialized", "server/discover"])
    def test_other_methods_without_meta_are_not_handshake_era(self, method):
        check_handshake_initialize(Message(method, {}, id=1))

    def test_unsupported_version_with_custom_supported(self):
        err = unsupported_version("1999-01-01", ("2026-07-28", "2025-11-25"))
        assert err.code == -32022
        assert err.http_status == 400
        assert err.data == {"supported": ["2026-07-28", "2025-11-25"], "requested": "1999-01-01"}
        assert isinstance(err.data["supported"], list)


# --------------------------------------------------------------------------- check_routing_headers


class TestCheckRoutingHeaders:
    def test_all_headers_match(self):
        msg = _message("tools/call", {"name": "add"})
        check_routing_headers(
            msg,
            _meta_model(),
            {"mcp-protocol-version": PROTOCOL_VERSION, "mcp-method": "tools/call", "mcp-name": "add"},
            "name",
        )

    def test_method_without_name_param(self):
        check_routing_headers(
            _message("tools/list"),
            _meta_model(),
            {"mcp-protocol-version": PROTOCOL_VERSION, "mcp-method": "tools/list"},
            None,
        )

    def test_missing_protocol_version_header(self):
        with pytest.raises(McpJsonRpcError) as info:
            check_routing_headers(_message("tools/list"), _meta_model(), {"mcp-method": "tools/list"}, None)
        err = info.value
        assert err.code == -32020
        assert err.http_status == 400
        assert err.message == "Missing required header MCP-Protocol-Version"
        assert err.data == {"header": "MCP-Protocol-Version"}

    def test_protocol_version_header_disagrees_with_meta(self):
        with pytest.raises(McpJsonRpcError) as info:
            check_routing_headers(
                _message("tools/list"),
                _meta_model(),
                {"mcp-protocol-version": "2025-11-25", "mcp-method": "tools/list"},
                None,
            )
        err = info.value
        assert err.code == -32020
        assert err.data == {"header": "MCP-Protocol-Version"}
        assert (
            err.message == "Header MCP-Protocol-Version ('2025-11-25') does not match the request body ('2026-07-28')"
        )

    def test_protocol_version_header_tolerates_ows(self):
        check_routing_headers(
            _message("tools/list"),
            _meta_model(),
            {"mcp-protocol-version": " 2026-07-28\t", "mcp-method": "tools/list"},
            None,
        )

    def test_missing_method_header(self):
        with pytest.raises(McpJsonRpcError) as info:
            check_routing_headers(
                _message("tools/list"), _meta_model(), {"mcp-protocol-version": PROTOCOL_VERSION}, None
            )
        assert info.value.code == -32020
        assert info.value.message == "Missing required header Mcp-Method"
        assert info.value.data == {"header": "Mcp-Method"}

    @pytest.mark.parametrize("header", ["TOOLS/LIST", "Tools/List", "tools/call", "tools/list/", ""])
    def test_method_header_is_case_sensitive_and_exact(self, header):
        with pytest.raises(McpJsonRpcError) as info:
            check_routing_headers(
                _message("tools/list"),
                _meta_model(),
                {"mcp-protocol-version": PROTOCOL_VERSION, "mcp-method": header},
                None,
            )
        assert info.value.code == -32020
        assert info.value.data == {"header": "Mcp-Method"}
        assert f"({header!r}) does not match the request body ('tools/list')" in info.value.message

    @pytest.mark.parametrize("header", ["  tools/list", "tools/list  ", "\ttools/list\t", " \t tools/list \t "])
    def test_method_header_whitespace_is_tolerated(self, header):
        check_routing_headers(
            _message("tools/list"),
            _meta_model(),
            {"mcp-protocol-version": PROTOCOL_VERSION, "mcp-method": header},
            None,
        )

    def test_protocol_version_is_checked_before_method(self):
        with pytest.raises(McpJsonRpcError) as info:
            check_routing_headers(_message("tools/list"), _meta_model(), {}, None)
        assert info.value.data == {"header": "MCP-Protocol-Version"}

    def test_missing_name_header(self):
        with pytest.raises(McpJsonRpcError) as info:
            check_routing_headers(
                _message("tools/call", {"name": "add"}),
                _meta_model(),
                {"mcp-protocol-version": PROTOCOL_VERSION, "mcp-method": "tools/call"},
                "name",
            )
        assert info.value.code == -32020
        assert info.value.message == "Missing required header Mcp-Name"
        assert info.value.data == {"header": "Mcp-Name"}

    def test_name_header_mismatch(self):
        with pytest.raises(McpJsonRpcError) as info:
            check_routing_headers(
                _message("tools/call", {"name": "add"}),
                _meta_model(),
                {"mcp-protocol-version": PROTOCOL_VERSION, "mcp-method": "tools/call", "mcp-name": "Add"},
                "name",
            )
        assert info.value.data == {"header": "Mcp-Name"}
        assert info.value.message == "Header Mcp-Name ('Add') does not match the request body ('add')"

    def test_name_header_base64(self):
        check_routing_headers(
            _message("tools/call", {"name": "\u00fcber-tool"}),
            _meta_model(),
            {"mcp-protocol-version": PROTOCOL_VERSION, "mcp-method": "tools/call", "mcp-name": b64("\u00fcber-tool")},
            "name",
        )

    def test_name_header_base64_mismatch(self):
        with pytest.raises(McpJsonRpcError) as info:
            check_routing_headers(
                _message("tools/call", {"name": "\u00fcber-tool"}),
                _meta_model(),
                {"mcp-protocol-version": PROTOCOL_VERSION, "mcp-method": "tools/call", "mcp-name": b64("uber-tool")},
                "name",
            )
        assert info.value.data == {"header": "Mcp-Name"}
        assert "does not match" in info.value.message

    def test_name_header_with_raw_non_ascii_is_rejected(self):
        with pytest.raises(McpJsonRpcError) as info:
            check_routing_headers(
                _message("tools/call", {"name": "\u00fcber"}),
                _meta_model(),
                {"mcp-protocol-version": PROTOCOL_VERSION, "mcp-method": "tools/call", "mcp-name": "\u00fcber"},
                "name",
            )
        assert info.value.code == -32020
        assert info.value.message == "Header Mcp-Name contains characters outside visible ASCII"

    def test_name_header_malformed_base64(self):
        with pytest.raises(McpJsonRpcError) as info:
            check_routing_headers(
                _message("tools/call", {"name": "Hello"}),
                _meta_model(),
                {
                    "mcp-protocol-version": PROTOCOL_VERSION,
                    "mcp-method": "tools/call",
                    "mcp-name": "=?base64?SGVsbG8?=",
                },
                "name",
            )
        assert info.value.message == "Header Mcp-Name has a malformed base64 value"

    def test_name_header_mirrors_uri_for_resources_read(self):
        uri = "file:///project/config.json"
        check_routing_headers(
            _message("resources/read", {"uri": uri}),
            _meta_model(),
            {"mcp-protocol-version": PROTOCOL_VERSION, "mcp-method": "resources/read", "mcp-name": uri},
            "uri",
        )
        with pytest.raises(McpJsonRpcError):
            check_routing_headers(
                _message("resources/read", {"uri": uri}),
                _meta_model(),
                {"mcp-protocol-version": PROTOCOL_VERSION, "mcp-method": "resources/read", "mcp-name": "file:///other"},
                "uri",
            )

    @pytest.mark.parametrize("params", [{}, {"name": 5}, {"name": None}])
    def test_name_header_not_required_when_body_has_no_string_name(self, params):
        # Dispatch reports the bad/missing name (-32602); the header rung has nothing to mirror.
        check_routing_headers(
            _message("tools/call", params),
            _meta_model(),
            {"mcp-protocol-version": PROTOCOL_VERSION, "mcp-method": "tools/call"},
            "name",
        )

    def test_name_header_ignored_for_methods_without_name_param(self):
        check_routing_headers(
            _message("tools/list", {"name": "x"}),
            _meta_model(),
            {"mcp-protocol-version": PROTOCOL_VERSION, "mcp-method": "tools/list", "mcp-name": "whatever"},
            None,
        )


# --------------------------------------------------------------------------- check_version


class TestCheckVersion:
    def test_supported(self):
        check_version(_meta_model())

    def test_unsupported(self):
        with pytest.raises(McpJsonRpcError) as info:
            check_version(_meta_model("2025-11-25"))
        err = info.value
        assert err.code == -32022
        assert err.http_status == 400
        assert err.message == "Unsupported protocol version: 2025-11-25"
        assert err.data == {"supported": ["2026-07-28"], "requested": "2025-11-25"}

    def test_custom_supported_list(self):
        check_version(_meta_model("2025-11-25"), ("2026-07-28", "2025-11-25"))
        with pytest.raises(McpJsonRpcError) as info:
            check_version(_meta_model("2026-07-28"), ("2025-11-25",))
        assert info.value.data == {"supported": ["2025-11-25"], "requested": "2026-07-28"}

    def test_a_refusal_names_the_advertised_versions(self):
        # A handshake-only server serves no 2026-07-28 revision, and names the ones it does speak.
        check_version(_meta_model(), ("2026-07-28",), ("2025-11-25",))
        with pytest.raises(McpJsonRpcError) as info:
            check_version(_meta_model(), (), ("2025-11-25", "2025-06-18"))
        assert info.value.data == {"supported": ["2025-11-25", "2025-06-18"], "requested": "2026-07-28"}


# --------------------------------------------------------------------------- admit


class TestAdmit:
    def test_valid_request_is_admitted(self):
        obj = request_obj("tools/call", rid="r1", params={"name": "add", "arguments": {"a": 1}})
        result = run_admit(body(obj), good_headers("tools/call", **{"mcp-name": "add"}))
        assert isinstance(result, Admitted)
        assert result.message.method == "tools/call"
        assert result.message.id == "r1"
        assert result.message.is_notification is False
        assert result.message.params["arguments"] == {"a": 1}
        assert result.meta is not None
        assert result.meta.protocol_version == "2026-07-28"
        assert result.meta.client_capabilities == {}

    def test_notification_is_admitted_without_meta_or_routing_headers(self):
        raw = body({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 3}})
        result = run_admit(raw, {"content-type": JSON, "accept": BOTH})
        assert result.meta is None
        assert result.message.is_notification is True
        assert result.message.method == "notifications/cancelled"

    def test_notification_skips_version_check(self):
        raw = body({"jsonrpc": "2.0", "method": "notifications/x", "params": {"_meta": meta("1999-01-01")}})
        result = run_admit(raw, {"content-type": JSON})
        assert result.meta is None

    def test_origin_is_the_first_rung(self):
        rej = reject(
            b"not json", {"origin": "https://evil.example", "content-type": "text/plain"}, allowed=lambda o: False
        )
        assert rej.http_status == 403
        assert rej.error.message == "Origin not allowed: https://evil.example"
        assert rej.request_id is None

    def test_origin_callback_receives_the_origin_header(self):
        seen = []
        run_admit(
            body(request_obj()), good_headers(origin="http://localhost:3000"), allowed=lambda o: seen.append(o) or True
        )
        assert seen == ["http://localhost:3000"]

    def test_media_type_before_json(self):
        rej = reject(b"{not json", {"content-type": "text/plain", "accept": BOTH})
        assert rej.http_status == 415
        assert rej.error.code == -32600

    def test_accept_before_json(self):
        rej = reject(b"{not json", {"content-type": JSON, "accept": "text/html"})
        assert rej.http_status == 406

    def test_missing_content_type(self):
        rej = reject(body(request_obj()), {"accept": BOTH})
        assert rej.http_status == 415

    def test_bad_json(self):
        rej = reject(b'{"jsonrpc": "2.0", "id": 4,', good_headers())
        assert rej.http_status == 400
        assert rej.error.code == -32700
        assert rej.request_id is None

    def test_batch(self):
        rej = reject(body([request_obj(rid=1), request_obj(rid=2)]), good_headers())
        assert rej.http_status == 400
        assert rej.error.code == -32600
        assert "Batch" in rej.error.message
        assert rej.request_id is None

    def test_envelope_error_carries_readable_id(self):
        rej = reject(body({"jsonrpc": "1.0", "id": 7, "method": "tools/list"}), good_headers())
        assert rej.error.code == -32600
        assert rej.http_status == 400
        assert rej.request_id == 7

    def test_envelope_error_with_string_id(self):
        rej = reject(body({"jsonrpc": "2.0", "id": "x1", "method": "ping", "params": [1]}), good_headers())
        assert rej.error.code == -32600
        assert rej.request_id == "x1"

    @pytest.mark.parametrize("bad_id", [True, 1.5, None, [1]])
    def test_envelope_error_with_unreadable_id(self, bad_id):
        rej = reject(body({"jsonrpc": "2.0", "id": bad_id, "method": "tools/list"}), good_headers())
        assert rej.error.code == -32600
        assert rej.request_id is None

    def test_posted_response(self):
        rej = reject(body({"jsonrpc": "2.0", "id": 3, "result": {}}), good_headers())
        assert rej.error.code == -32600
        assert rej.error.message == "Invalid request: clients must not post JSON-RPC responses"
        assert rej.request_id == 3

    def test_legacy_initialize(self):
        raw = body({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18"}})
        # A handshake-era client sends no MCP-Method header: its initialize is told so before the header rung.
        rej = reject(raw, {"content-type": JSON, "accept": BOTH})
        assert rej.http_status == 400
        assert rej.error.code == -32022
        assert rej.error.data == {"supported": ["2026-07-28"], "requested": "2025-06-18"}
        assert rej.request_id == 0

    def test_legacy_initialize_after_media_types(self):
        raw = body({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {}})
        rej = reject(raw, {"content-type": "text/plain"})
        assert rej.http_status == 415

    def test_missing_meta(self):
        raw = body({"jsonrpc": "2.0", "id": 9, "method": "tools/list", "params": {}})
        rej = reject(raw, good_headers())
        assert rej.http_status == 400
        assert rej.error.code == -32602
        assert rej.request_id == 9
        assert "params._meta is required" in rej.error.message

    def test_missing_meta_checked_before_headers(self):
        raw = body({"jsonrpc": "2.0", "id": 9, "method": "tools/list"})
        rej = reject(raw, {"content-type": JSON, "accept": BOTH})
        assert rej.error.code == -32602

    def test_missing_capabilities_in_meta(self):
        raw = body(
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/list",
                "params": {"_meta": {META_PROTOCOL_VERSION: PROTOCOL_VERSION}},
            }
        )
        rej = reject(raw, good_headers())
        assert rej.error.code == -32602
        assert rej.http_status == 400
        assert META_CLIENT_CAPABILITIES in rej.error.message
        assert rej.request_id == 2

    def test_missing_method_header(self):
        headers = good_headers()
        del headers["mcp-method"]
        rej = reject(body(request_obj(rid=11)), headers)
        assert rej.http_status == 400
        assert rej.error.code == -32020
        assert rej.error.data == {"header": "Mcp-Method"}
        assert rej.request_id == 11

    def test_missing_protocol_version_header(self):
        headers = good_headers()
        del headers["mcp-protocol-version"]
        rej = reject(body(request_obj(rid=12)), headers)
        assert rej.error.code == -32020
        assert rej.error.data == {"header": "MCP-Protocol-Version"}
        assert rej.request_id == 12

    def test_name_param_lookup_by_method(self):
        obj = request_obj("tools/call", params={"name": "add"})
        rej = reject(body(obj), good_headers("tools/call"))
        assert rej.error.code == -32020
        assert rej.error.data == {"header": "Mcp-Name"}

    def test_no_name_param_for_unlisted_method(self):
        obj = request_obj("tools/call", params={"name": "add"})
        result = admit(body(obj), good_headers("tools/call"), origin_allowed=lambda o: True, name_params={})
        assert result.message.params["name"] == "add"

    def test_tasks_get_mirrors_task_id(self):
        obj = request_obj("tasks/get", params={"taskId": "t-1"})
        run_admit(body(obj), good_headers("tasks/get", **{"mcp-name": "t-1"}))
        rej = reject(body(obj), good_headers("tasks/get", **{"mcp-name": "t-2"}))
        assert rej.error.data == {"header": "Mcp-Name"}

    def test_headers_are_checked_before_version(self):
        # Unsupported version in the body AND a disagreeing header: -32020, not -32022.
        obj = request_obj(version="2025-11-25", rid=5)
        rej = reject(body(obj), good_headers(version="2026-07-28"))
        assert rej.http_status == 400
        assert rej.error.code == -32020
        assert rej.error.data == {"header": "MCP-Protocol-Version"}
        assert rej.request_id == 5

    def test_bad_method_header_and_bad_version(self):
        obj = request_obj(version="2025-11-25", rid=5)
        rej = reject(body(obj), good_headers(method="TOOLS/LIST", version="2025-11-25"))
        assert rej.error.code == -32020
        assert rej.error.data == {"header": "Mcp-Method"}

    def test_unsupported_version(self):
        obj = request_obj(version="2025-11-25", rid="v")
        rej = reject(body(obj), good_headers(version="2025-11-25"))
        assert rej.http_status == 400
        assert rej.error.code == -32022
        assert rej.error.message == "Unsupported protocol version: 2025-11-25"
        assert rej.error.data == {"supported": ["2026-07-28"], "requested": "2025-11-25"}
        assert rej.request_id == "v"

    def test_custom_supported_versions(self):
        obj = request_obj(version="2025-11-25")
        result = run_admit(body(obj), good_headers(version="2025-11-25"), supported=("2026-07-28", "2025-11-25"))
        assert result.meta.protocol_version == "2025-11-25"

    def test_rejection_carries_integer_zero_id(self):
        obj = request_obj(version="1999-01-01", rid=0)
        rej = reject(body(obj), good_headers(version="1999-01-01"))
        assert rej.request_id == 0
        assert type(rej.request_id) is int

    def test_undecodable_body(self):
        rej = reject(b"\xff\xfe", good_headers())
        assert rej.error.code == -32700
        assert rej.request_id is None
