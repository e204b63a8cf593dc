"""Unit tests for django_mcp.protocol.headers: routing-header values and ``x-mcp-header`` parameters."""

from __future__ import annotations

import base64

import pytest

from django_mcp.protocol.errors import McpJsonRpcError
from django_mcp.protocol.headers import ParamHeader, check_param_headers, decode_value, param_headers


def b64(text: str) -> str:
    """The sentinel form a client sends for ``text``."""
    return "=?base64?" + base64.b64encode(text.encode("utf-8")).decode("ascii") + "?="


def assert_mismatch(exc_info, header: str, fragment: str) -> None:
    err = exc_info.value
    assert isinstance(err, McpJsonRpcError)
    assert err.code == -32020
    assert err.http_status == 400
    assert err.data == {"header": header}
    assert fragment in err.message, err.message


# --------------------------------------------------------------------------- decode_value


class TestDecodeValue:
    @pytest.mark.parametrize(
        ("raw", "expected"),
        [
            ("tools/call", "tools/call"),
            ("  tools/call", "tools/call"),
            ("tools/call\t", "tools/call"),
            (" \t tools/call \t ", "tools/call"),
            ("a b  c", "a b  c"),  # inner spaces are part of the value
            ("", ""),
            ("   ", ""),
            ("~!@#$%^&*()_+{}|:<>?`-=[];',./\"\\", "~!@#$%^&*()_+{}|:<>?`-=[];',./\"\\"),
        ],
    )
    def test_plain_values_are_trimmed_of_ows(self, raw, expected):
        assert decode_value(raw, "Mcp-Name") == expected

    def test_values_are_case_sensitive(self):
        assert decode_value("TOOLS/List", "Mcp-Method") == "TOOLS/List"

    @pytest.mark.parametrize("raw", ["caf\u00e9", "\u6771\u4eac", "a\tb", "a\x00b", "line\nbreak", "del\x7f", "\x1f"])
    def test_characters_outside_visible_ascii_are_rejected(self, raw):
        with pytest.raises(McpJsonRpcError) as info:
            decode_value(raw, "Mcp-Param-City")
        assert_mismatch(info, "Mcp-Param-City", "outside visible ASCII")
        assert info.value.message == "Header Mcp-Param-City contains characters outside visible ASCII"

    @pytest.mark.parametrize(
        "text",
        ["Hello", "\u6771\u4eac", "caf\u00e9 \u2615", "  padded  ", "=?base64?nested?=", "line1\nline2", "a", "ab"],
    )
    def test_base64_sentinel_round_trip(self, text):
        assert decode_value(b64(text), "Mcp-Name") == text

    def test_known_base64_value(self):
        assert decode_value("=?base64?SGVsbG8=?=", "Mcp-Name") == "Hello"
        assert decode_value("=?base64?5p2x5Lqs?=", "Mcp-Name") == "\u6771\u4eac"

    def test_sentinel_surrounded_by_ows(self):
        assert decode_value("  =?base64?SGVsbG8=?=\t", "Mcp-Name") == "Hello"

    def test_empty_sentinel_decodes_to_empty_string(self):
        assert decode_value("=?base64??=", "Mcp-Name") == ""

    @pytest.mark.parametrize(
        "raw",
        [
            "=?base64?SGVsbG8?=",  # missing padding
            "=?base64?SGVsbG8==?=",  # too much padding
            "=?base64?SGk*?=",  # not in the base64 alphabet
            "=?base64?SG Vs?=",  # inner space
            "=?base64?SGl=?=",  # non-canonical: trailing bits set (decodes to "Hi" like SGk=)
            "=?base64?/w==?=",  # decodes to b"\xff": not UTF-8
            "=?base64?SGVsbG8-?=",  # url-safe alphabet
        ],
    )
    def test_malformed_base64_is_rejected(self, raw):
        with pytest.raises(McpJsonRpcError) as info:
            decode_value(raw, "Mcp-Name")
        assert_mismatch(info, "Mcp-Name", "malformed base64")
        assert info.value.message == "Header Mcp-Name has a malformed base64 value"

    @pytest.mark.parametrize(
        "raw",
        [
            "=?BASE64?SGVsbG8=?=",  # prefix must be lower-case and exact
            "=?base64?SGVsbG8=",  # no suffix
            "?base64?SGVsbG8=?=",  # no leading '='
            "x=?base64?SGVsbG8=?=",  # prefix not at the start
            "=?base64?=",  # too short to hold prefix and suffix separately
        ],
    )
    def test_near_sentinels_are_taken_literally(self, raw):
        assert decode_value(raw, "Mcp-Name") == raw

    def test_error_names_the_header_given(self):
        with pytest.raises(McpJsonRpcError) as info:
            decode_value("=?base64?!!?=", "Mcp-Param-Region")
        assert info.value.data == {"header": "Mcp-Param-Region"}


# --------------------------------------------------------------------------- param_headers


def _schema(**properties):
    return {"type": "object", "properties": properties}


class TestParamHeaders:
    def test_no_properties(self):
        assert param_headers({"type": "object"}) == ()
        assert param_headers({"type": "object", "properties": {}}) == ()

    def test_unannotated_properties(self):
        assert param_headers(_schema(a={"type": "string"}, b={"type": "integer"})) == ()

    def test_annotations_in_declaration_order(self):
        specs = param_headers(
            _schema(
                region={"type": "string", "x-mcp-header": "Region"},
                note={"type": "string"},
                count={"type": "integer", "x-mcp-header": "Count"},
                dry_run={"type": "boolean", "x-mcp-header": "Dry-Run"},
            )
        )
        assert specs == (
            ParamHeader("Region", ("region",), "string"),
            ParamHeader("Count", ("count",), "integer"),
            ParamHeader("Dry-Run", ("dry_run",), "boolean"),
        )
        assert [s.header for s in specs] == ["Mcp-Param-Region", "Mcp-Param-Count", "Mcp-Param-Dry-Run"]

    def test_nested_properties_path(self):
        specs = param_headers(
            _schema(
                location={
                    "type": "object",
                    "properties": {
                        "city": {"type": "string", "x-mcp-header": "City"},
                        "geo": {"type": "object", "properties": {"zone": {"type": "integer", "x-mcp-header": "Zone"}}},
                    },
                }
            )
        )
        assert specs == (
            ParamHeader("City", ("location", "city"), "string"),
            ParamHeader("Zone", ("location", "geo", "zone"), "integer"),
        )

    def test_every_token_character_is_accepted(self):
        name = "Az09!#$%&'*+-.^_`|~"
        assert param_headers(_schema(a={"type": "string", "x-mcp-header": name})) == (
            ParamHeader(name, ("a",), "string"),
        )

    @pytest.mark.parametrize("name", ["", "My Header", "a:b", "a/b", "R\u00e9gion", "a,b", "(x)", 'a"b', "tab\tx"])
    def test_non_token_names_are_rejected(self, name):
        with pytest.raises(ValueError, match="is not an RFC 9110 token"):
            param_headers(_schema(a={"type": "string", "x-mcp-header": name}))

    @pytest.mark.parametrize("name", [42, None, True, ["Region"], {"n": "Region"}])
    def test_non_string_names_are_rejected(self, name):
        with pytest.raises(ValueError, match="is not an RFC 9110 token"):
            param_headers(_schema(a={"type": "string", "x-mcp-header": name}))

    def test_token_error_names_the_property_path(self):
        with pytest.raises(ValueError) as info:
            param_headers(
                _schema(loc={"type": "object", "properties": {"city": {"type": "string", "x-mcp-header": "a b"}}})
            )
        assert str(info.value) == "x-mcp-header 'a b' at loc.city is not an RFC 9110 token"

    def test_name_with_trailing_newline_is_not_a_token(self):
        with pytest.raises(ValueError, match="is not an RFC 9110 token"):
            param_headers(_schema(a={"type": "string", "x-mcp-header": "Region\n"}))

    @pytest.mark.parametrize(
        "prop",
        [
            {"type": "number"},
            {"type": "object"},
            {"type": "array", "items": {"type": "string"}},
            {"type": "null"},
            {},  # no type at all
            {"type": ["string", "null"]},
            {"enum": ["a", "b"]},
        ],
    )
    def test_wrong_types_are_rejected(self, prop):
        with pytest.raises(ValueError) as info:
            param_headers(_schema(a={**prop, "x-mcp-header": "A"}))
        assert str(info.value) == "x-mcp-header 'A' at a must annotate a string, integer or boolean property"

    @pytest.mark.parametrize(("first", "second"), [("Region", "Region"), ("Region", "region"), ("X-ID", "x-Id")])
    def test_duplicate_names_are_rejected_case_insensitively(self, first, second):
        with pytest.raises(ValueError) as info:
            param_headers(
                _schema(
                    a={"type": "string", "x-mcp-header": first},
                    b={"type": "string", "x-mcp-header": second},
                )
            )
        assert str(info.value) == f"x-mcp-header {second!r} is used twice (names are case-insensitive)"

    def test_duplicate_across_nesting_levels(self):
        with pytest.raises(ValueError, match="used twice"):
            param_headers(
                _schema(
                    a={"type": "string", "x-mcp-header": "Id"},
                    o={"type": "object", "properties": {"b": {"type": "integer", "x-mcp-header": "ID"}}},
                )
            )

    @pytest.mark.parametrize(
        "schema",
        [
            # under items
            _schema(tags={"type": "array", "items": {"type": "string", "x-mcp-header": "Tag"}}),
            # under anyOf
            _schema(a={"anyOf": [{"type": "string", "x-mcp-header": "A"}, {"type": "integer"}]}),
            # under oneOf / allOf
            _schema(a={"oneOf": [{"type": "string", "x-mcp-header": "A"}]}),
            {"type": "object", "allOf": [{"properties": {"a": {"type": "string", "x-mcp-header": "A"}}}]},
            # under $defs, reached through $ref
            {
                "type": "object",
                "$defs": {"Region": {"type": "string", "x-mcp-header": "Region"}},
                "properties": {"region": {"$ref": "#/$defs/Region"}},
            },
            # conditionals
            {"type": "object", "if": {"properties": {"a": {"type": "string", "x-mcp-header": "A"}}}},
            # additionalProperties / patternProperties
            {"type": "object", "additionalProperties": {"type": "string", "x-mcp-header": "A"}},
            {"type": "object", "patternProperties": {"^a": {"type": "string", "x-mcp-header": "A"}}},
            # on the root schema itself
            {"type": "object", "x-mcp-header": "Root"},
        ],
    )
    def test_annotations_not_reachable_through_properties_are_rejected(self, schema):
        with pytest.raises(ValueError) as info:
            param_headers(schema)
        assert (
            str(info.value) == "x-mcp-header may only annotate properties reachable from the root through 'properties'"
        )

    def test_unreachable_annotation_rejected_even_next_to_a_valid_one(self):
        schema = _schema(
            ok={"type": "string", "x-mcp-header": "Ok"},
            tags={"type": "array", "items": {"type": "string", "x-mcp-header": "Tag"}},
        )
        with pytest.raises(ValueError, match="reachable from the root"):
            param_headers(schema)

    def test_property_named_x_mcp_header_is_not_an_annotation(self):
        assert param_headers(_schema(**{"x-mcp-header": {"type": "string"}})) == ()

    def test_non_mapping_property_schemas_are_skipped(self):
        # `true` is a valid JSON Schema for a property; nothing to annotate there.
        assert param_headers(_schema(a=True, b={"type": "string", "x-mcp-header": "B"})) == (
            ParamHeader("B", ("b",), "string"),
        )


# --------------------------------------------------------------------------- check_param_headers


SPECS = param_headers(
    _schema(
        region={"type": "string", "x-mcp-header": "Region"},
        count={"type": "integer", "x-mcp-header": "Count"},
        dry_run={"type": "boolean", "x-mcp-header": "Dry-Run"},
        location={"type": "object", "properties": {"city": {"type": "string", "x-mcp-header": "City"}}},
        note={"type": "string"},
    )
)


def _only(name: str) -> tuple[ParamHeader, ...]:
    return tuple(s for s in SPECS if s.name == name)


class TestCheckParamHeaders:
    def test_all_present_and_matching(self):
        check_param_headers(
            SPECS,
            {"region": "us-west1", "count": 3, "dry_run": True, "location": {"city": "Paris"}, "note": "n"},
            {
                "mcp-param-region": "us-west1",
                "mcp-param-count": "3",
                "mcp-param-dry-run": "true",
                "mcp-param-city": "Paris",
            },
        )

    def test_no_arguments_and_no_headers(self):
        check_param_headers(SPECS, {}, {})

    def test_unannotated_arguments_need_no_header(self):
        check_param_headers(SPECS, {"note": "hello"}, {})

    def test_missing_header_when_argument_present(self):
        with pytest.raises(McpJsonRpcError) as info:
            check_param_headers(SPECS, {"region": "us-west1"}, {})
        assert_mismatch(info, "Mcp-Param-Region", "required when the argument is present")
        assert info.value.message == "Header Mcp-Param-Region is required when the argument is present"

    def test_header_present_when_argument_absent(self):
        with pytest.raises(McpJsonRpcError) as info:
            check_param_headers(SPECS, {}, {"mcp-param-count": "3"})
        assert_mismatch(info, "Mcp-Param-Count", "is set but the argument is absent")
        assert info.value.message == "Header Mcp-Param-Count is set but the argument is absent"

    def test_null_argument_counts_as_absent(self):
        check_param_headers(SPECS, {"region": None}, {})
        with pytest.raises(McpJsonRpcError) as info:
            check_param_headers(SPECS, {"region": None}, {"mcp-param-region": "null"})
        assert_mismatch(info, "Mcp-Param-Region", "argument is absent")

    @pytest.mark.parametrize("value", ["1e99999999999999999999", "1e-99999999999999999999", "-9e999999999999999999"])
    def test_an_exponent_past_decimal_is_a_mismatch_not_a_crash(self, value):
        with pytest.raises(McpJsonRpcError) as info:
            check_param_headers(SPECS, {"count": 3}, {"mcp-param-count": value})
        assert_mismatch(info, "Mcp-Param-Count", "does not match")

    def test_mismatching_string(self):
        with pytest.raises(McpJsonRpcError) as info:
            check_param_headers(SPECS, {"region": "us-west1"}, {"mcp-param-region": "eu-west1"})
        assert_mismatch(info, "Mcp-Param-Region", "does not match the argument's value")
        assert info.value.message == "Header Mcp-Param-Region does not match the argument's value"

    def test_string_comparison_is_case_sensitive(self):
        with pytest.raises(McpJsonRpcError) as info:
            check_param_headers(_only("Region"), {"region": "us-west1"}, {"mcp-param-region": "US-WEST1"})
        assert_mismatch(info, "Mcp-Param-Region", "does not match")

    def test_ows_around_the_header_value_is_ignored(self):
        check_param_headers(_only("Region"), {"region": "us-west1"}, {"mcp-param-region": " \tus-west1  "})

    def test_header_lookup_uses_lower_case_names(self):
        # The caller lower-cases header names; a mixed-case key is not looked up.
        with pytest.raises(McpJsonRpcError) as info:
            check_param_headers(_only("Region"), {"region": "x"}, {"Mcp-Param-Region": "x"})
        assert_mismatch(info, "Mcp-Param-Region", "required")

    def test_base64_encoded_value(self):
        check_param_headers(_only("Region"), {"region": "\u6771\u4eac"}, {"mcp-param-region": b64("\u6771\u4eac")})

    def test_base64_encoded_value_with_surrounding_spaces(self):
        check_param_headers(_only("Region"), {"region": "  padded "}, {"mcp-param-region": b64("  padded ")})

    def test_base64_value_that_decodes_to_something_else(self):
        with pytest.raises(McpJsonRpcError) as info:
            check_param_headers(_only("Region"), {"region": "\u6771\u4eac"}, {"mcp-param-region": b64("Osaka")})
        assert_mismatch(info, "Mcp-Param-Region", "does not match")

    def test_malformed_base64_value(self):
        with pytest.raises(McpJsonRpcError) as info:
            check_param_headers(_only("Region"), {"region": "Hello"}, {"mcp-param-region": "=?base64?SGVsbG8?="})
        assert_mismatch(info, "Mcp-Param-Region", "malformed base64")

    def test_non_ascii_raw_value(self):
        with pytest.raises(McpJsonRpcError) as info:
            check_param_headers(_only("Region"), {"region": "caf\u00e9"}, {"mcp-param-region": "caf\u00e9"})
        assert_mismatch(info, "Mcp-Param-Region", "outside visible ASCII")

    @pytest.mark.parametrize("header", ["42", "42.0", "4.2e1", "42.000", " 42 ", "4200e-2"])
    def test_integer_is_compared_numerically(self, header):
        check_param_headers(_only("Count"), {"count": 42}, {"mcp-param-count": header})

    def test_integral_float_body_matches_integer_header(self):
        check_param_headers(_only("Count"), {"count": 42.0}, {"mcp-param-count": "42"})

    def test_negative_and_zero_integers(self):
        check_param_headers(_only("Count"), {"count": -7}, {"mcp-param-count": "-7"})
        check_param_headers(_only("Count"), {"count": 0}, {"mcp-param-count": "0"})

    @pytest.mark.parametrize("header", ["43", "41.9", "forty-two", "", "0x2A", "true", "42abc"])
    def test_integer_mismatch(self, header):
        with pytest.raises(McpJsonRpcError) as info:
            check_param_headers(_only("Count"), {"count": 42}, {"mcp-param-count": header})
        assert_mismatch(info, "Mcp-Param-Count", "does not match")

    @pytest.mark.parametrize("body", [True, "42", [42]])
    def test_integer_header_against_non_numeric_body(self, body):
        header = "1" if body is True else "42"
        with pytest.raises(McpJsonRpcError) as info:
            check_param_headers(_only("Count"), {"count": body}, {"mcp-param-count": header})
        assert_mismatch(info, "Mcp-Param-Count", "does not match")

    def test_large_integers_are_compared_exactly(self):
        with pytest.raises(McpJsonRpcError) as info:
            check_param_headers(_only("Count"), {"count": 9007199254740993}, {"mcp-param-count": "9007199254740992"})
        assert_mismatch(info, "Mcp-Param-Count", "does not match")

    def test_integer_header_must_be_a_json_number(self):
        with pytest.raises(McpJsonRpcError) as info:
            check_param_headers(_only("Count"), {"count": 42}, {"mcp-param-count": "4_2"})
        assert_mismatch(info, "Mcp-Param-Count", "does not match")

    @pytest.mark.parametrize(("body", "header"), [(True, "true"), (False, "false")])
    def test_boolean_match(self, body, header):
        check_param_headers(_only("Dry-Run"), {"dry_run": body}, {"mcp-param-dry-run": header})

    @pytest.mark.parametrize(
        ("body", "header"),
        [(True, "false"), (False, "true"), (True, "True"), (True, "TRUE"), (True, "1"), (False, "0"), (False, "")],
    )
    def test_boolean_mismatch(self, body, header):
        with pytest.raises(McpJsonRpcError) as info:
            check_param_headers(_only("Dry-Run"), {"dry_run": body}, {"mcp-param-dry-run": header})
        assert_mismatch(info, "Mcp-Param-Dry-Run", "does not match")

    @pytest.mark.parametrize("body", ["true", 1, 0])
    def test_boolean_header_against_non_boolean_body(self, body):
        with pytest.raises(McpJsonRpcError) as info:
            check_param_headers(_only("Dry-Run"), {"dry_run": body}, {"mcp-param-dry-run": "true"})
        assert_mismatch(info, "Mcp-Param-Dry-Run", "does not match")

    def test_string_header_against_non_string_body(self):
        with pytest.raises(McpJsonRpcError) as info:
            check_param_headers(_only("Region"), {"region": 5}, {"mcp-param-region": "5"})
        assert_mismatch(info, "Mcp-Param-Region", "does not match")

    def test_nested_property(self):
        check_param_headers(_only("City"), {"location": {"city": "Paris"}}, {"mcp-param-city": "Paris"})

    def test_nested_property_missing_header(self):
        with pytest.raises(McpJsonRpcError) as info:
            check_param_headers(_only("City"), {"location": {"city": "Paris"}}, {})
        assert_mismatch(info, "Mcp-Param-City", "required when the argument is present")

    def test_nested_property_mismatch(self):
        with pytest.raises(McpJsonRpcError) as info:
            check_param_headers(_only("City"), {"location": {"city": "Paris"}}, {"mcp-param-city": "Lyon"})
        assert_mismatch(info, "Mcp-Param-City", "does not match")

    @pytest.mark.parametrize(
        "arguments", [{}, {"location": {}}, {"location": "Paris"}, {"location": None}, {"location": ["Paris"]}]
    )
    def test_nested_property_absent(self, arguments):
        check_param_headers(_only("City"), arguments, {})
        with pytest.raises(McpJsonRpcError) as info:
            check_param_headers(_only("City"), arguments, {"mcp-param-city": "Paris"})
        assert_mismatch(info, "Mcp-Param-City", "argument is absent")

    def test_first_failing_spec_is_reported(self):
        with pytest.raises(McpJsonRpcError) as info:
            check_param_headers(SPECS, {"region": "a", "count": 1}, {"mcp-param-region": "b"})
        assert info.value.data == {"header": "Mcp-Param-Region"}

    def test_later_spec_fails_after_earlier_ones_pass(self):
        with pytest.raises(McpJsonRpcError) as info:
            check_param_headers(SPECS, {"region": "a", "count": 1}, {"mcp-param-region": "a"})
        assert info.value.data == {"header": "Mcp-Param-Count"}
        assert "required" in info.value.message

    def test_no_specs_ignores_everything(self):
        check_param_headers((), {"region": "a"}, {"mcp-param-region": "b", "mcp-param-other": "c"})
