"""Unit tests for django_mcp.server.tools (build_tool, Tool) and django_mcp.server.registry (ToolRegistry, @tool)."""

from __future__ import annotations

import copy
import datetime
import enum
import json
from typing import Annotated, Any, Literal

import pytest
from django.core.exceptions import ImproperlyConfigured
from pydantic import AfterValidator, BaseModel, Field

from django_mcp import DefinitionError
from django_mcp.protocol.errors import McpJsonRpcError
from django_mcp.protocol.headers import ParamHeader
from django_mcp.server.tools import registry as registry_module
from django_mcp.server.tools.definition import Tool, build_tool
from django_mcp.server.tools.registry import ToolRegistry, tool


def _walk_keys(node: Any):
    if isinstance(node, dict):
        for k, v in node.items():
            yield k
            yield from _walk_keys(v)
    elif isinstance(node, list):
        for v in node:
            yield from _walk_keys(v)


def _invalid_params(exc_info) -> McpJsonRpcError:
    err = exc_info.value
    assert isinstance(err, McpJsonRpcError)
    assert err.code == -32602
    assert err.http_status == 400
    return err


def echo(request, text: str) -> str:
    """Echo the text."""
    return text


def _must_be_even(n: int) -> int:
    if n % 2:
        raise ValueError("must be even")
    return n


# Module level: under `from __future__ import annotations` the hints must resolve in module globals.
def even_tool(request, n: Annotated[int, AfterValidator(_must_be_even)]):
    return n


def search_tool(
    request,
    q: Annotated[str, Field(description="Search text", min_length=2)],
    limit: Annotated[int, Field(ge=1, le=50)] = 10,
):
    return q


# --------------------------------------------------------------------------- names


class TestToolNames:
    def test_valid_names(self):
        names = ["a", "add", "A-Z_a.z-0.9", "a" * 128, "tools.v2.search", "_private", "-x-"]
        assert [build_tool(echo, name=n).name for n in names] == names

    @pytest.mark.parametrize(
        "name",
        ["", "a" * 129, "a/b", "a b", " add", "add ", "na\u00efve", "a:b", "a,b", "tab\tname", "emoji\U0001f600", "\n"],
    )
    def test_invalid_names_are_improperly_configured(self, name):
        reg = ToolRegistry()
        with pytest.raises(ImproperlyConfigured) as info:
            reg.register(echo, name=name)
        assert str(info.value) == (
            f"Invalid tool name {name!r}: use 1-128 characters of letters, digits, '_', '-' and '.'"
        )
        assert name not in reg
        assert len(reg) == 0

    def test_name_with_trailing_newline_is_invalid(self):
        with pytest.raises(ImproperlyConfigured, match="Invalid tool name"):
            ToolRegistry().register(echo, name="add\n")

    @pytest.mark.parametrize("name", [5, b"add"])
    def test_non_string_name(self, name):
        with pytest.raises(ImproperlyConfigured, match="Invalid tool name"):
            ToolRegistry().register(echo, name=name)

    def test_name_defaults_to_function_name(self):
        assert build_tool(echo).name == "echo"

    def test_lambda_name_is_invalid(self):
        with pytest.raises(ImproperlyConfigured, match=r"Invalid tool name '<lambda>'"):
            ToolRegistry().register(lambda request: None)

    def test_build_tool_raises_the_one_definition_error(self):
        with pytest.raises(DefinitionError) as info:
            build_tool(echo, name="a/b")
        assert isinstance(info.value, ImproperlyConfigured)


# --------------------------------------------------------------------------- other definition errors


class TestDefinitionErrors:
    def test_duplicate_name(self):
        reg = ToolRegistry()
        reg.register(echo)

        def other(request):
            pass

        with pytest.raises(ImproperlyConfigured) as info:
            reg.register(other, name="echo")
        assert "'echo'" in str(info.value)
        assert str(info.value).endswith("is already registered")
        assert len(reg) == 1
        assert reg.get("echo").handler is echo

    def test_names_are_case_sensitive(self):
        reg = ToolRegistry()
        reg.register(echo)
        reg.register(echo, name="Echo")
        assert [t.name for t in reg] == ["echo", "Echo"]

    def test_not_callable(self):
        with pytest.raises(ImproperlyConfigured, match="is not callable"):
            ToolRegistry().register("echo")  # type: ignore[arg-type]

    def test_handler_without_parameters(self):
        def ping():
            return "pong"

        with pytest.raises(ImproperlyConfigured) as info:
            ToolRegistry().register(ping)
        assert str(info.value) == (
            "Tool 'ping': the handler's first parameter must take the request (e.g. `def ping(request, ...)`)"
        )

    def test_handler_with_keyword_only_request(self):
        def kw(*, request, text: str):
            pass

        with pytest.raises(ImproperlyConfigured, match="first parameter must take the request"):
            ToolRegistry().register(kw)

    def test_handler_with_only_var_positional(self):
        def star(*args):
            pass

        with pytest.raises(ImproperlyConfigured, match="first parameter must take the request"):
            ToolRegistry().register(star)

    def test_handler_with_only_var_keyword(self):
        def kwargs_only(**kwargs):
            pass

        with pytest.raises(ImproperlyConfigured, match="first parameter must take the request"):
            ToolRegistry().register(kwargs_only)

    def test_positional_only_request_is_fine(self):
        def posonly(request, /, text: str):
            return text

        assert build_tool(posonly).input_schema["required"] == ["text"]

    def test_positional_only_argument_is_rejected(self):
        def posonly(request, text, /):
            pass

        with pytest.raises(ImproperlyConfigured) as info:
            ToolRegistry().register(posonly)
        assert str(info.value) == "Tool 'posonly': argument 'text' cannot be positional-only"

    def test_extension_options_are_kept_for_the_extensions(self):
        # Validated by the extension that claims them (system check django_mcp.E006), not by the core.
        registry = ToolRegistry()
        registry.register(echo, task_support="sometimes")
        assert dict(registry.get("echo").extension_options) == {"task_support": "sometimes"}

    @pytest.mark.parametrize(
        "schema", [{"type": "array"}, {"type": "string"}, {"properties": {}}, {}, {"type": ["object", "null"]}]
    )
    def test_input_schema_must_be_type_object(self, schema):
        with pytest.raises(ImproperlyConfigured) as info:
            ToolRegistry().register(echo, input_schema=schema)
        assert str(info.value) == 'Tool \'echo\': input_schema must have "type": "object"'

    @pytest.mark.parametrize("schema", [["type", "object"], "object", True, 5])
    def test_input_schema_must_be_a_mapping(self, schema):
        with pytest.raises(ImproperlyConfigured) as info:
            ToolRegistry().register(echo, input_schema=schema)
        assert str(info.value) == "Tool 'echo': input_schema must be a JSON Schema object"

    @pytest.mark.parametrize(
        "schema",
        [
            {"type": "object", "properties": {"a": {"type": "strng"}}},
            {"type": "object", "properties": 5},
            {"type": "object", "required": "a"},
            {"type": "object", "properties": {"a": {"minimum": "zero"}}},
        ],
    )
    def test_invalid_json_schema(self, schema):
        with pytest.raises(ImproperlyConfigured) as info:
            ToolRegistry().register(echo, input_schema=schema)
        assert str(info.value).startswith("Tool 'echo': input_schema is not a valid JSON Schema: ")

    def test_invalid_output_schema(self):
        with pytest.raises(ImproperlyConfigured) as info:
            ToolRegistry().register(echo, output_schema={"type": "object", "properties": {"n": {"type": "integr"}}})
        assert str(info.value).startswith("Tool 'echo': output_schema is not a valid JSON Schema: ")

    def test_output_schema_must_be_a_mapping(self):
        with pytest.raises(ImproperlyConfigured) as info:
            ToolRegistry().register(echo, output_schema=["x"])
        assert str(info.value) == "Tool 'echo': output_schema must be a JSON Schema object"

    def test_invalid_x_mcp_header_annotation(self):
        schema = {"type": "object", "properties": {"region": {"type": "string", "x-mcp-header": "My Region"}}}
        with pytest.raises(ImproperlyConfigured) as info:
            ToolRegistry().register(echo, input_schema=schema)
        assert str(info.value) == "Tool 'echo': x-mcp-header 'My Region' at region is not an RFC 9110 token"

    def test_x_mcp_header_on_a_number(self):
        schema = {"type": "object", "properties": {"n": {"type": "number", "x-mcp-header": "N"}}}
        with pytest.raises(ImproperlyConfigured, match="must annotate a string, integer or boolean property"):
            ToolRegistry().register(echo, input_schema=schema)

    def test_unresolvable_type_hints(self):
        def broken(request, a: NoSuchType):  # type: ignore[name-defined]  # noqa: F821
            pass

        with pytest.raises(ImproperlyConfigured) as info:
            ToolRegistry().register(broken)
        assert str(info.value).startswith("Tool 'broken': cannot read the handler's type hints: ")
        assert "NoSuchType" in str(info.value)

    def test_failed_registration_leaves_registry_unchanged(self):
        reg = ToolRegistry()
        reg.register(echo)
        with pytest.raises(ImproperlyConfigured):
            reg.register(echo, name="bad name")
        assert [t.name for t in reg] == ["echo"]


# --------------------------------------------------------------------------- derived schema


class Point(BaseModel):
    x: int
    y: int = 0


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class TestDerivedSchema:
    def test_required_and_defaults(self):
        def add(request, a: int, b: int = 2, label: str | None = None, *, scale: float = 1.0) -> int:
            """Add two numbers."""
            return a + b

        t = build_tool(add)
        assert t.input_schema == {
            "type": "object",
            "properties": {
                "a": {"type": "integer"},
                "b": {"type": "integer", "default": 2},
                "label": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
                "scale": {"type": "number", "default": 1.0},
            },
            "required": ["a"],
        }
        assert t.description == "Add two numbers."
        assert t.arguments_model is not None

    def test_all_required(self):
        def f(request, a: str, b: bool, c: list[int]):
            pass

        schema = build_tool(f).input_schema
        assert schema["required"] == ["a", "b", "c"]
        assert schema["properties"] == {
            "a": {"type": "string"},
            "b": {"type": "boolean"},
            "c": {"type": "array", "items": {"type": "integer"}},
        }

    def test_no_required_key_when_everything_has_a_default(self):
        def f(request, a: int = 1):
            pass

        assert "required" not in build_tool(f).input_schema

    def test_no_arguments(self):
        def ping(request):
            return "pong"

        t = build_tool(ping)
        assert t.input_schema == {"type": "object", "properties": {}}
        assert t.to_wire()["inputSchema"] == {"type": "object", "properties": {}}

    def test_request_and_var_parameters_are_not_in_the_schema(self):
        def f(request, a: int, *args, **kwargs):
            pass

        schema = build_tool(f).input_schema
        assert list(schema["properties"]) == ["a"]
        assert schema["required"] == ["a"]

    def test_unannotated_parameter_accepts_anything(self):
        def f(request, anything, n: int = 0):
            pass

        schema = build_tool(f).input_schema
        assert schema["properties"]["anything"] == {}
        assert schema["required"] == ["anything"]

    def test_no_title_keys_for_simple_types(self):
        def f(request, a: int, b: str = "x", c: list[str] | None = None, d: dict[str, int] | None = None):
            pass

        schema = build_tool(f).input_schema
        assert "title" not in set(_walk_keys(schema))

    def test_nested_model_is_referenced(self):
        def f(request, p: Point):
            pass

        schema = build_tool(f).input_schema
        assert schema["properties"] == {"p": {"$ref": "#/$defs/Point"}}
        assert schema["$defs"]["Point"]["properties"] == {
            "x": {"type": "integer"},
            "y": {"type": "integer", "default": 0},
        }
        assert schema["$defs"]["Point"]["required"] == ["x"]

    def test_no_title_keys_in_defs(self):
        def f(request, p: Point, c: Color = Color.RED):
            pass

        schema = build_tool(f).input_schema
        assert "title" not in set(_walk_keys(schema)), schema

    def test_annotated_field_metadata_reaches_the_schema(self):
        schema = build_tool(search_tool).input_schema
        assert schema["properties"]["q"] == {"type": "string", "description": "Search text", "minLength": 2}
        assert schema["properties"]["limit"] == {"type": "integer", "minimum": 1, "maximum": 50, "default": 10}

    def test_derived_schema_is_valid_json_schema_with_type_object(self):
        def f(request, when: datetime.date, p: Point, c: Color = Color.RED):
            pass

        schema = build_tool(f).input_schema
        assert schema["type"] == "object"
        assert schema["properties"]["when"] == {"type": "string", "format": "date"}
        assert schema["required"] == ["when", "p"]

    def test_docstring_is_cleaned(self):
        def f(request):
            """
            First line.

                Indented detail.
            """

        assert build_tool(f).description == "First line.\n\n    Indented detail."

    def test_explicit_description_wins(self):
        assert build_tool(echo, description="Custom").description == "Custom"

    def test_no_docstring_no_description(self):
        def f(request):
            pass

        assert build_tool(f).description is None
        assert "description" not in build_tool(f).to_wire()


# --------------------------------------------------------------------------- explicit schema / to_wire


EXPLICIT_SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "title": "Search arguments",
    "x-vendor": {"keep": [1, 2, 3]},
    "properties": {
        "query": {"$ref": "#/$defs/Query", "description": "What to look for"},
        "region": {"type": "string", "x-mcp-header": "Region"},
        "limit": {"type": "integer", "minimum": 1, "maximum": 100, "default": 10},
    },
    "required": ["query"],
    "additionalProperties": False,
    "$defs": {"Query": {"$anchor": "q", "type": "string", "minLength": 1, "title": "Query"}},
}


class TestExplicitSchemaAndWire:
    def test_explicit_schema_is_served_byte_for_byte(self):
        schema = copy.deepcopy(EXPLICIT_SCHEMA)
        t = build_tool(echo, input_schema=schema)
        wire = t.to_wire()["inputSchema"]
        assert wire is schema
        assert wire == EXPLICIT_SCHEMA
        assert json.dumps(wire) == json.dumps(EXPLICIT_SCHEMA)  # same keys, same order
        assert list(wire) == list(EXPLICIT_SCHEMA)
        assert wire["$defs"] is schema["$defs"]
        assert wire["$defs"]["Query"]["$anchor"] == "q"
        assert wire["$schema"] == "https://json-schema.org/draft/2020-12/schema"
        assert wire["title"] == "Search arguments"
        assert t.arguments_model is None

    def test_explicit_schema_is_not_mutated(self):
        schema = {"type": "object"}
        t = build_tool(echo, input_schema=schema)
        t.validate_arguments({"text": "x"})
        assert schema == {"type": "object"}
        assert "properties" not in t.to_wire()["inputSchema"]

    def test_param_headers_from_explicit_schema(self):
        t = build_tool(echo, input_schema=copy.deepcopy(EXPLICIT_SCHEMA))
        assert t.param_headers == (ParamHeader("Region", ("region",), "string"),)

    def test_minimal_wire(self):
        def bare(request):
            pass

        assert build_tool(bare).to_wire() == {
            "name": "bare",
            "inputSchema": {"type": "object", "properties": {}},
        }

    def test_full_wire(self):
        out_schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
        t = build_tool(
            echo,
            name="echo.v2",
            title="Echo",
            description="Echoes",
            input_schema={"type": "object", "properties": {"text": {"type": "string"}}},
            output_schema=out_schema,
            annotations={"readOnlyHint": True},
            icons=[{"src": "https://example.com/i.png", "mimeType": "image/png"}],
            task_support="optional",
            meta={"com.example/x": 1},
        )
        wire = t.to_wire()
        assert wire == {
            "name": "echo.v2",
            "title": "Echo",
            "description": "Echoes",
            "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
            "outputSchema": out_schema,
            "annotations": {"readOnlyHint": True},
            "icons": [{"src": "https://example.com/i.png", "mimeType": "image/png"}],
            "_meta": {"com.example/x": 1},
        }
        assert list(wire) == [
            "name",
            "title",
            "description",
            "inputSchema",
            "outputSchema",
            "annotations",
            "icons",
            "_meta",
        ]
        assert wire["outputSchema"] is out_schema
        assert isinstance(wire["icons"], list)

    def test_extension_options_are_not_core_wire(self):
        # The tasks extension adds execution.taskSupport itself (ExtensionPlugin.decorate_tool).
        assert "execution" not in build_tool(echo, task_support="optional").to_wire()

    def test_output_error(self):
        t = build_tool(
            echo, output_schema={"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
        )
        assert t.output_error({"n": 1}) is None
        assert t.output_error({"n": "x"}) == "/n: 'x' is not of type 'integer'"
        assert t.output_error({}).endswith(": 'n' is a required property")

    def test_output_error_without_output_schema(self):
        assert build_tool(echo).output_error({"anything": object()}) is None


# --------------------------------------------------------------------------- validate_arguments


NESTED_SCHEMA = {
    "type": "object",
    "properties": {
        "items": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"sku": {"type": "string"}, "qty": {"type": "integer", "minimum": 1}},
                "required": ["sku"],
            },
        },
        "mode": {"enum": ["fast", "slow"]},
    },
}


def order(request, items=None, mode=None):
    pass


class TestValidateArguments:
    def test_valid_explicit_arguments_are_returned_unchanged(self):
        t = build_tool(order, input_schema=NESTED_SCHEMA)
        args = {"items": [{"sku": "a", "qty": 2}], "mode": "fast"}
        assert t.validate_arguments(args) == {"items": [{"sku": "a", "qty": 2}], "mode": "fast"}

    def test_path_of_nested_failure(self):
        t = build_tool(order, input_schema=NESTED_SCHEMA)
        with pytest.raises(McpJsonRpcError) as info:
            t.validate_arguments({"items": [{"sku": "a", "qty": 1}, {"sku": "b", "qty": 0}]})
        err = _invalid_params(info)
        assert err.data == {"tool": "order", "path": "/items/1/qty"}
        assert err.message == "Invalid arguments for tool 'order' at /items/1/qty: 0 is less than the minimum of 1"

    def test_deepest_error_is_reported(self):
        t = build_tool(order, input_schema=NESTED_SCHEMA)
        with pytest.raises(McpJsonRpcError) as info:
            t.validate_arguments({"mode": "medium", "items": [{"sku": 5}]})
        err = _invalid_params(info)
        assert err.data == {"tool": "order", "path": "/items/0/sku"}
        assert "5 is not of type 'string'" in err.message

    def test_enum_failure_path(self):
        t = build_tool(order, input_schema=NESTED_SCHEMA)
        with pytest.raises(McpJsonRpcError) as info:
            t.validate_arguments({"mode": "medium"})
        err = _invalid_params(info)
        assert err.data == {"tool": "order", "path": "/mode"}
        assert "'medium' is not one of ['fast', 'slow']" in err.message

    def test_missing_required_property(self):
        t = build_tool(echo)
        with pytest.raises(McpJsonRpcError) as info:
            t.validate_arguments({})
        err = _invalid_params(info)
        assert err.data["tool"] == "echo"
        assert "'text' is a required property" in err.message

    def test_root_error_path_is_the_empty_pointer(self):
        with pytest.raises(McpJsonRpcError) as info:
            build_tool(echo).validate_arguments({})
        assert info.value.data == {"tool": "echo", "path": ""}

    def test_path_escapes_json_pointer_tokens(self):
        schema = {"type": "object", "properties": {"a/b": {"type": "integer"}, "c~d": {"type": "integer"}}}
        t = build_tool(order, input_schema=schema)
        with pytest.raises(McpJsonRpcError) as info:
            t.validate_arguments({"a/b": "x"})
        assert info.value.data["path"] == "/a~1b"
        with pytest.raises(McpJsonRpcError) as info:
            t.validate_arguments({"c~d": "x"})
        assert info.value.data["path"] == "/c~0d"

    def test_additional_properties_false(self):
        schema = {"type": "object", "properties": {"a": {"type": "integer"}}, "additionalProperties": False}
        with pytest.raises(McpJsonRpcError) as info:
            build_tool(order, input_schema=schema).validate_arguments({"a": 1, "zzz": 2})
        err = _invalid_params(info)
        assert "'zzz' was unexpected" in err.message

    def test_none_means_no_arguments(self):
        def ping(request):
            pass

        assert build_tool(ping).validate_arguments(None) == {}

    def test_none_with_required_arguments_fails(self):
        with pytest.raises(McpJsonRpcError) as info:
            build_tool(echo).validate_arguments(None)
        assert "'text' is a required property" in _invalid_params(info).message

    @pytest.mark.parametrize("arguments", [[1, 2], "text", 5, True])
    def test_arguments_must_be_an_object(self, arguments):
        with pytest.raises(McpJsonRpcError) as info:
            build_tool(echo).validate_arguments(arguments)
        err = _invalid_params(info)
        assert err.message == "Invalid arguments for tool 'echo': arguments must be an object"
        assert err.data is None

    def test_explicit_schema_extra_arguments_dropped(self):
        def f(request, a):
            pass

        t = build_tool(f, input_schema={"type": "object"})
        assert t.validate_arguments({"a": 1, "b": 2}) == {"a": 1}

    def test_explicit_schema_extra_arguments_kept_with_kwargs(self):
        def f(request, a, **kwargs):
            pass

        t = build_tool(f, input_schema={"type": "object"})
        assert t.validate_arguments({"a": 1, "b": 2}) == {"a": 1, "b": 2}

    def test_explicit_schema_values_are_not_converted(self):
        def f(request, when):
            pass

        t = build_tool(f, input_schema={"type": "object", "properties": {"when": {"type": "string", "format": "date"}}})
        assert t.validate_arguments({"when": "2024-01-02"}) == {"when": "2024-01-02"}

    def test_derived_wrong_type(self):
        def add(request, a: int, b: int = 0):
            pass

        with pytest.raises(McpJsonRpcError) as info:
            build_tool(add).validate_arguments({"a": "1"})
        err = _invalid_params(info)
        assert err.data == {"tool": "add", "path": "/a"}
        assert err.message == "Invalid arguments for tool 'add' at /a: '1' is not of type 'integer'"

    def test_derived_conversion(self):
        def f(request, when: datetime.date, p: Point, pair: tuple[int, int], c: Color = Color.RED, n: int = 0):
            pass

        out = build_tool(f).validate_arguments({"when": "2024-01-02", "p": {"x": 3}, "pair": [1, 2], "c": "blue"})
        assert out == {"when": datetime.date(2024, 1, 2), "p": Point(x=3, y=0), "pair": (1, 2), "c": Color.BLUE}
        assert type(out["when"]) is datetime.date
        assert type(out["p"]) is Point
        assert type(out["pair"]) is tuple
        assert out["c"] is Color.BLUE

    def test_derived_defaults_are_left_to_the_handler(self):
        def f(request, a: int, b: int = 5):
            pass

        assert build_tool(f).validate_arguments({"a": 1}) == {"a": 1}

    def test_derived_explicit_null_for_optional(self):
        def f(request, label: str | None = "x"):
            pass

        assert build_tool(f).validate_arguments({"label": None}) == {"label": None}

    def test_derived_extra_arguments_dropped_without_kwargs(self):
        def f(request, a: int):
            pass

        assert build_tool(f).validate_arguments({"a": 1, "b": 2}) == {"a": 1}

    def test_derived_extra_arguments_kept_with_kwargs(self):
        def f(request, a: int, **kwargs):
            pass

        assert build_tool(f).validate_arguments({"a": 1, "b": 2}) == {"a": 1, "b": 2}

    def test_annotated_validator_is_applied(self):
        t = build_tool(even_tool)
        assert t.input_schema["properties"]["n"] == {"type": "integer"}  # the schema cannot say "even"
        assert t.validate_arguments({"n": 4}) == {"n": 4}
        with pytest.raises(McpJsonRpcError) as info:
            t.validate_arguments({"n": 3})
        err = _invalid_params(info)
        assert err.data == {"tool": "even_tool", "path": "/n"}
        assert err.message.startswith("Invalid arguments for tool 'even_tool' at /n: ")
        assert "must be even" in err.message

    def test_pydantic_nested_failure_path(self):
        def f(request, when: datetime.date):
            pass

        # "2024-13-40" is a string (jsonschema format checks are off by default), so pydantic catches it.
        with pytest.raises(McpJsonRpcError) as info:
            build_tool(f).validate_arguments({"when": "2024-13-40"})
        err = _invalid_params(info)
        assert err.data == {"tool": "f", "path": "/when"}


def plain_tool(
    request,
    text: str,
    n: int = 0,
    x: float = 0.0,
    flag: bool = False,
    tags: list[int] | None = None,
    extra: dict[str, Any] | None = None,
    mode: Literal["a", "b"] = "a",
):
    pass


class TestPlainArgumentsSkipTheSchemaPass:
    """A generated schema of plain JSON types is not checked again when the model took the values unchanged."""

    def test_plain_values_are_returned_without_running_the_schema(self, monkeypatch):
        t = build_tool(plain_tool)
        args = {"text": "é", "n": 3, "x": 2.5, "flag": True, "tags": [1, 2], "extra": {"k": [None, 1.5]}, "mode": "b"}
        monkeypatch.setattr("django_mcp.server.tools.definition._first_error", lambda *a: pytest.fail("the schema ran"))
        assert t.validate_arguments(args) == args

    @pytest.mark.parametrize(
        ("arguments", "message"),
        [
            ({"text": "a", "n": "5"}, "at /n: '5' is not of type 'integer'"),  # pydantic would take "5"
            ({"text": "a", "n": True}, "at /n: True is not of type 'integer'"),  # and True as 1
            ({"text": "a", "tags": [1, True]}, "at /tags: [1, True] is not valid under any of the given schemas"),
            ({"text": "a", "flag": 1}, "at /flag: 1 is not of type 'boolean'"),
            ({"text": 5}, "at /text: 5 is not of type 'string'"),
            ({"text": "a", "mode": "c"}, "at /mode: 'c' is not one of ['a', 'b']"),
            ({}, "at : 'text' is a required property"),
        ],
    )
    def test_what_the_model_would_convert_is_refused_by_the_schema_as_before(self, arguments, message):
        with pytest.raises(McpJsonRpcError) as info:
            build_tool(plain_tool).validate_arguments(arguments)
        assert _invalid_params(info).message == f"Invalid arguments for tool 'plain_tool' {message}"

    def test_a_converted_value_still_passes_the_schema_then_converts_once(self, monkeypatch):
        t = build_tool(plain_tool)
        validations, validate = [], t.arguments_model.model_validate
        monkeypatch.setattr(t.arguments_model, "model_validate", lambda value: validations.append(1) or validate(value))
        out = t.validate_arguments({"text": "a", "x": 5, "n": 5.0})
        assert out == {"text": "a", "x": 5.0, "n": 5} and type(out["x"]) is float and type(out["n"]) is int
        assert len(validations) == 1  # the model's conversion is not repeated after the schema's pass

    def test_fields_with_schema_extras_or_constraints_always_run_the_schema(self):
        def extra(request, mode: str = Field("a", json_schema_extra={"enum": ["a", "b"]})):
            pass

        def constrained(request, n: Annotated[int, Field(ge=0)] = 0):
            pass

        with pytest.raises(McpJsonRpcError) as info:
            build_tool(extra).validate_arguments({"mode": "c"})  # pydantic alone would take any string
        assert "'c' is not one of ['a', 'b']" in _invalid_params(info).message
        with pytest.raises(McpJsonRpcError) as info:
            build_tool(constrained).validate_arguments({"n": -1})
        assert _invalid_params(info).data == {"tool": "constrained", "path": "/n"}


# --------------------------------------------------------------------------- registry and decorators


class TestRegistry:
    def test_bare_register_returns_the_function(self):
        reg = ToolRegistry()
        assert reg.register(echo) is echo
        assert "echo" in reg
        t = reg.get("echo")
        assert isinstance(t, Tool)
        assert t.handler is echo
        assert t.description == "Echo the text."

    def test_register_as_bare_decorator(self):
        reg = ToolRegistry()

        @reg.register
        def hello(request, who: str = "world"):
            """Say hello."""
            return f"hello {who}"

        assert callable(hello)
        assert hello(None, "you") == "hello you"
        assert reg.get("hello").handler is hello
        assert reg.get("hello").description == "Say hello."

    def test_register_as_decorator_with_options(self):
        reg = ToolRegistry()

        @reg.register(name="greet", title="Greeter", description="Greets", annotations={"idempotentHint": True})
        def hello(request):
            return "hi"

        assert hello(None) == "hi"
        assert "hello" not in reg
        t = reg.get("greet")
        assert t.handler is hello
        assert t.title == "Greeter"
        assert t.description == "Greets"
        assert t.annotations == {"idempotentHint": True}

    def test_register_with_handler_and_options(self):
        reg = ToolRegistry()
        assert reg.register(echo, name="say", task_support="required") is echo
        assert reg.get("say").extension_options == {"task_support": "required"}

    def test_registration_order_is_kept(self):
        reg = ToolRegistry()
        for name in ["zeta", "alpha", "mid"]:
            reg.register(echo, name=name)
        assert [t.name for t in reg] == ["zeta", "alpha", "mid"]
        assert len(reg) == 3

    def test_iteration_is_a_snapshot(self):
        reg = ToolRegistry()
        reg.register(echo, name="a")
        reg.register(echo, name="b")
        names = []
        for t in reg:
            names.append(t.name)
            reg.unregister(t.name)
        assert names == ["a", "b"]
        assert len(reg) == 0

    def test_get_unknown(self):
        assert ToolRegistry().get("nope") is None

    def test_contains(self):
        reg = ToolRegistry()
        reg.register(echo)
        assert "echo" in reg
        assert "ECHO" not in reg
        assert 5 not in reg

    def test_unregister(self):
        reg = ToolRegistry()
        reg.register(echo)
        reg.unregister("echo")
        assert "echo" not in reg
        assert reg.get("echo") is None
        reg.register(echo)  # the name is free again
        assert len(reg) == 1

    def test_unregister_unknown(self):
        with pytest.raises(KeyError):
            ToolRegistry().unregister("nope")

    def test_registries_are_independent(self):
        a, b = ToolRegistry(), ToolRegistry()
        a.register(echo)
        assert "echo" not in b
        assert len(b) == 0


class TestModuleLevelToolDecorator:
    """``@tool`` registers into the project-wide registry; every test removes what it added."""

    @pytest.fixture
    def global_registry(self):
        reg = registry_module.registry
        before = [t.name for t in reg]
        yield reg
        for name in [t.name for t in reg]:
            if name not in before:
                reg.unregister(name)
        assert [t.name for t in reg] == before

    def test_bare(self, global_registry):
        @tool
        def djmcp_unit_shout(request, text: str):
            return text.upper()

        assert djmcp_unit_shout(None, "hi") == "HI"
        t = global_registry.get("djmcp_unit_shout")
        assert t.handler is djmcp_unit_shout
        assert t.input_schema["required"] == ["text"]

    def test_with_options(self, global_registry):
        @tool(name="djmcp_unit.shout.v2", description="Shouts", task_support="optional")
        def shout(request, text: str):
            return text.upper()

        assert shout(None, "a") == "A"
        assert "shout" not in global_registry
        t = global_registry.get("djmcp_unit.shout.v2")
        assert t.handler is shout
        assert t.description == "Shouts"
        assert t.extension_options == {"task_support": "optional"}

    def test_called_with_function(self, global_registry):
        assert tool(echo, name="djmcp_unit_echo") is echo
        assert global_registry.get("djmcp_unit_echo").handler is echo

    def test_errors_propagate(self, global_registry):
        count = len(global_registry)
        with pytest.raises(ImproperlyConfigured, match="Invalid tool name"):
            tool(echo, name="no spaces")
        assert len(global_registry) == count

    def test_duplicate_in_global_registry(self, global_registry):
        tool(echo, name="djmcp_unit_dup")
        with pytest.raises(ImproperlyConfigured, match="already registered"):
            tool(echo, name="djmcp_unit_dup")

    def test_package_exports_the_same_objects(self):
        import django_mcp

        assert django_mcp.tool == tool
        assert django_mcp.registry is registry_module.registry
        assert django_mcp.ToolRegistry is ToolRegistry
        assert django_mcp.Tool is Tool


def test_the_core_tool_options_are_typed_keyword_parameters():
    import inspect

    from django_mcp import tool

    parameters = inspect.signature(tool).parameters
    core = ["name", "title", "description", "input_schema", "output_schema", "annotations", "icons", "meta"]
    core += ["single_use_state", "scopes", "permissions", "timeout_seconds", "rate_limit", "audit_arguments"]
    assert all(parameters[name].kind is inspect.Parameter.KEYWORD_ONLY for name in core)
    assert parameters["timeout_seconds"].annotation == "float | None"
    assert parameters["extension_options"].kind is inspect.Parameter.VAR_KEYWORD  # task_support and the like
