"""Regression tests for the "Hardening" issue: every request gets a JSON-RPC answer on a valid wire.

Each repro is pinned twice: on the pure protocol functions (parse_json, parse_message, dumps,
encode_json, sse.event) and through the real endpoint, in-process (``views._json`` encodes with ``WireJSONEncoder``).

The strict readers here (``strict_loads``, ``sse_data``) are shared with tests/transport/test_fuzz.py.
"""

from __future__ import annotations

import json
import math
import time
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest
from django.core.serializers.json import DjangoJSONEncoder

from django_mcp.protocol import sse
from django_mcp.protocol.errors import PARSE_ERROR, McpJsonRpcError
from django_mcp.protocol.jsonrpc import (
    MAX_NESTING_DEPTH,
    WireJSONEncoder,
    dumps,
    encode_json,
    error_response,
    parse_json,
    parse_message,
    result_response,
)
from tests.strict_wire import SURROGATE, sse_data, strict_loads
from tests.wire import post, request_body


def _parse_error(body: bytes) -> McpJsonRpcError:
    with pytest.raises(McpJsonRpcError) as info:
        parse_json(body)
    assert info.value.code == PARSE_ERROR
    assert info.value.http_status == 400
    return info.value


def _nested(depth: int, kind: str = "[") -> bytes:
    if kind == "[":
        return b"[" * depth + b"]" * depth
    return b'{"a":' * depth + b"1" + b"}" * depth


# --------------------------------------------------------------------------- 1. lone surrogates


class TestSurrogates:
    def test_parse_json_accepts_an_escaped_lone_surrogate(self):
        assert parse_json(b'{"id": "\\ud800"}') == {"id": SURROGATE}

    def test_parse_json_refuses_a_surrogate_encoded_as_utf8_bytes(self):
        # ED A0 80 is not UTF-8 (RFC 3629 §3); the escape above is the JSON way to send one.
        assert "utf-8" in _parse_error(b'{"id": "\xed\xa0\x80"}').message

    def test_parse_message_keeps_the_id_for_the_echo(self):
        message = parse_message(parse_json(b'{"jsonrpc": "2.0", "id": "\\udfff", "method": "m\\ud800"}'))
        assert (message.id, message.method) == ("\udfff", "m" + SURROGATE)

    @pytest.mark.parametrize(
        "value",
        [SURROGATE, "\udc00", f"a{SURROGATE}b", "\udfff\ud800", {SURROGATE: [SURROGATE]}, ["caf\u00e9", SURROGATE]],
    )
    def test_dumps_round_trips_every_str_exactly(self, value):
        text = dumps(value)
        text.encode("utf-8")  # the point: this used to raise UnicodeEncodeError
        assert strict_loads(text) == value

    def test_dumps_escapes_only_the_surrogates(self):
        assert dumps({"k": f"\u00e9{SURROGATE}\u2615"}) == '{"k":"\u00e9\\ud800\u2615"}'

    def test_a_surrogate_pair_as_two_code_units_reads_back_as_one_character(self):
        assert strict_loads(dumps("\ud83d\ude00")) == "\U0001f600"

    def test_an_echoed_error_response_encodes(self):
        response = error_response(SURROGATE, McpJsonRpcError(-32601, f"Method not found: {SURROGATE}"))
        assert strict_loads(encode_json(response)) == response

    def test_sse_event_encodes_a_surrogate_id(self):
        frame = sse.event(result_response(SURROGATE, {"text": "\udfff"}))
        assert sse_data(frame) == [{"jsonrpc": "2.0", "id": SURROGATE, "result": {"text": "\udfff"}}]

    @pytest.mark.parametrize("char", ["\u2028", "\u2029", "\x85"])
    def test_sse_data_stays_one_line_for_unicode_line_splitters(self, char):
        frame = sse.event({"text": f"a{char}b"})
        escaped = f"\\u{ord(char):04x}"
        assert frame == f'event: message\ndata: {{"text":"a{escaped}b"}}\n\n'.encode()
        # str.splitlines breaks at NEL, LS and PS too: the data line must survive it.
        assert frame.decode("utf-8").splitlines() == ["event: message", f'data: {{"text":"a{escaped}b"}}', ""]
        assert sse_data(frame) == [{"text": f"a{char}b"}]


# --------------------------------------------------------------------------- 2. deep nesting


class TestNesting:
    @pytest.mark.parametrize("kind", ["[", "{"])
    def test_990_levels_are_a_parse_error_not_a_recursion_error(self, kind):
        error = _parse_error(_nested(990, kind))
        assert f"nested deeper than {MAX_NESTING_DEPTH} levels" in error.message

    @pytest.mark.parametrize("kind", ["[", "{"])
    def test_the_limit_is_exact(self, kind):
        assert parse_json(_nested(MAX_NESTING_DEPTH, kind)) is not None
        _parse_error(_nested(MAX_NESTING_DEPTH + 1, kind))

    def test_a_wide_body_under_the_limit_is_fine(self):
        assert len(parse_json(b"[" + b",".join([b"[[1]]"] * 5000) + b"]")) == 5000

    def test_brackets_inside_strings_do_not_count(self):
        body = json.dumps({"s": "[" * 500 + '\\"{' * 500, "t": "]]"}).encode()
        assert parse_json(body)["s"].startswith("[[[")

    def test_deep_nesting_after_a_string_with_escaped_quotes_still_counts(self):
        _parse_error(b'["\\"[", ' + _nested(MAX_NESTING_DEPTH) + b"]")

    def test_the_scan_stays_linear_on_unterminated_strings(self):
        # Every quote opens a string that never closes: a naive scan is quadratic (minutes here).
        started = time.monotonic()
        _parse_error(b'"' + b'\\"' * 200_000)
        assert time.monotonic() - started < 5


# --------------------------------------------------------------------------- 3. NaN and Infinity


class TestNonFinite:
    @pytest.mark.parametrize("literal", [b"NaN", b"Infinity", b"-Infinity"])
    def test_literals_are_a_parse_error(self, literal):
        error = _parse_error(b'{"jsonrpc": "2.0", "id": 1, "method": "m", "params": {"x": [' + literal + b"]}}")
        assert literal.decode().lstrip("-") in error.message

    @pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
    def test_dumps_writes_null_not_nan(self, value):
        assert dumps({"x": [value, (1.5, value)]}) == '{"x":[null,[1.5,null]]}'

    def test_dumps_names_non_finite_keys_as_strings(self):
        assert strict_loads(dumps({math.nan: 1, math.inf: 2, -math.inf: 3, 1.5: 4})) == {
            "NaN": 1,
            "Infinity": 2,
            "-Infinity": 3,
            "1.5": 4,
        }

    def test_sse_event_writes_null_not_nan(self):
        assert sse_data(sse.event({"progress": math.nan})) == [{"progress": None}]

    def test_circular_structures_still_raise(self):
        loop: list[Any] = []
        loop.append(loop)
        with pytest.raises(ValueError, match="Circular"):
            dumps(loop)

    def test_json_dumps_with_the_encoder_class_gets_the_wire_format(self):
        # What JsonResponse(payload, encoder=...) calls, with json.dumps's defaults (ensure_ascii=True, ", ").
        text = json.dumps({"a": [1, math.inf], "b": f"\u00e9{SURROGATE}"}, cls=WireJSONEncoder)
        assert text == '{"a":[1,null],"b":"\u00e9\\ud800"}'

    def test_the_encoder_combines_with_djangos(self):
        class Encoder(WireJSONEncoder, DjangoJSONEncoder):
            pass

        moment = datetime(2026, 7, 28, 12, 0, tzinfo=UTC)
        text = json.dumps({"at": moment, "n": Decimal("1.5"), "s": SURROGATE, "x": math.nan}, cls=Encoder)
        assert strict_loads(text) == {"at": "2026-07-28T12:00:00Z", "n": "1.5", "s": SURROGATE, "x": None}

    def test_other_python_objects_still_raise_type_error(self):
        with pytest.raises(TypeError):
            dumps({"s": {1, 2}})


# --------------------------------------------------------------------------- 4. huge numbers


class TestHugeNumbers:
    @pytest.mark.parametrize("literal", [b"1e999", b"-1e999", b"1" * 400 + b".5", b"1" * 5000, b"-" + b"9" * 4400])
    def test_numbers_out_of_range_are_a_parse_error(self, literal):
        _parse_error(b'{"id": 1, "x": ' + literal + b"}")

    @pytest.mark.parametrize(
        "literal,value",
        [(b"1e-999", 0.0), (b"1e308", 1e308), (b"9" * 4000, int("9" * 4000)), (b"-0", 0), (b"1" * 30, int("1" * 30))],
    )
    def test_numbers_in_range_are_kept(self, literal, value):
        assert parse_json(b"[" + literal + b"]") == [value]

    def test_dumps_writes_null_for_an_integer_too_long_to_print(self):
        assert dumps({"n": 10**5000, "k": {10**5000: 1}}) == f'{{"n":null,"k":{{"{hex(10**5000)}":1}}}}'

    def test_a_4000_digit_id_is_echoed_exactly(self):
        rid = int("7" * 4000)
        assert strict_loads(encode_json(error_response(rid, McpJsonRpcError(-32600, "x"))))["id"] == rid


# --------------------------------------------------------------------------- 5. NUL


class TestNul:
    def test_nul_round_trips_through_parse_and_dumps(self):
        value = parse_json(b'{"t": "a\\u0000b", "\\u0000": 0}')
        assert value == {"t": "a\x00b", "\x00": 0}
        assert dumps(value) == '{"t":"a\\u0000b","\\u0000":0}'
        assert strict_loads(encode_json(value)) == value

    def test_nul_in_an_sse_event(self):
        assert sse_data(sse.event({"t": "\x00"})) == [{"t": "\x00"}]


# --------------------------------------------------------------------------- through the endpoint


def _json_answer(response: Any, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.content
    assert response["Content-Type"].startswith("application/json")
    return strict_loads(response.content)


async def _sse_answer(response: Any) -> list[Any]:
    assert response.status_code == 200
    assert response["Content-Type"] == "text/event-stream"
    return sse_data(b"".join([chunk async for chunk in response.streaming_content]))


async def test_endpoint_echoes_a_surrogate_id_in_a_result(async_client):
    response = await post(async_client, request_body("server/discover", id=SURROGATE))
    assert _json_answer(response, 200)["id"] == SURROGATE


async def test_endpoint_echoes_a_surrogate_id_in_a_ladder_error(async_client):
    response = await post(async_client, json.dumps({"jsonrpc": "2.0", "id": SURROGATE, "method": 7}))
    answer = _json_answer(response, 400)
    assert (answer["id"], answer["error"]["code"]) == (SURROGATE, -32600)


async def test_endpoint_echoes_a_surrogate_tool_argument(async_client):
    body = request_body("tools/call", {"name": "async_echo", "arguments": {"text": f"x{SURROGATE}y"}})
    answer = _json_answer(await post(async_client, body), 200)
    assert answer["result"]["content"][0]["text"] == f"x{SURROGATE}y"


async def test_endpoint_echoes_a_surrogate_in_an_error_message_and_data(async_client):
    ref = {"type": "ref/prompt", "name": f"no{SURROGATE}"}
    body = request_body("completion/complete", {"ref": ref, "argument": {"name": "colour", "value": "r"}})
    answer = _json_answer(await post(async_client, body, path="/mcp-content/"), 400)
    assert answer["error"]["code"] == -32602
    assert answer["error"]["message"].endswith(f"no{SURROGATE}")
    assert answer["error"]["data"]["ref"] == ref


async def test_endpoint_streams_a_surrogate_progress_token(async_client):
    body = request_body("tools/call", {"name": "sync_progress"}, id=SURROGATE, progressToken=f"p{SURROGATE}")
    messages = await _sse_answer(await post(async_client, body))
    tokens = [m["params"]["progressToken"] for m in messages if m.get("method") == "notifications/progress"]
    assert tokens == [f"p{SURROGATE}"] * 2
    assert messages[-1]["id"] == SURROGATE
    assert messages[-1]["result"]["content"][0]["text"] == "done"


@pytest.mark.parametrize("body", [_nested(990), _nested(990, "{"), _nested(MAX_NESTING_DEPTH + 1)])
async def test_endpoint_answers_deep_nesting_with_32700(async_client, body):
    answer = _json_answer(await post(async_client, body), 400)
    assert answer["error"]["code"] == -32700
    assert "nested deeper" in answer["error"]["message"]
    assert "id" not in answer


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity", "1e999", "1" * 5000])
@pytest.mark.parametrize("where", ["id", "argument"])
async def test_endpoint_answers_non_finite_and_huge_numbers_with_32700(async_client, literal, where):
    body = request_body("tools/call", {"name": "async_echo", "arguments": {"text": "PLACEHOLDER"}}, id="ID")
    raw = json.dumps(body).replace('"PLACEHOLDER"' if where == "argument" else '"ID"', literal)
    answer = _json_answer(
        await post(async_client, raw, headers={"Mcp-Method": "tools/call", "Mcp-Name": "async_echo"}), 400
    )
    assert answer["error"]["code"] == -32700


async def test_endpoint_accepts_and_echoes_a_4000_digit_integer(async_client):
    big = int("8" * 4000)
    answer = _json_answer(
        await post(async_client, request_body("tools/call", {"name": "add", "arguments": {"a": big}})), 200
    )
    assert answer["result"]["content"][0]["text"] == str(big)


async def test_endpoint_round_trips_nul(async_client):
    body = request_body("tools/call", {"name": "async_echo", "arguments": {"text": "a\x00b"}}, id="n\x00")
    answer = _json_answer(await post(async_client, body), 200)
    assert (answer["id"], answer["result"]["content"][0]["text"]) == ("n\x00", "a\x00b")
