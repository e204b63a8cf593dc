"""From an OpenAPI operation (django-ninja's, DRF's) to a tool's JSON Schemas.

The operation's path and query parameters become the tool's arguments, its JSON request body the
``body`` argument, its first 2xx JSON response the output schema (MCP wants an object there: another
response is wrapped as ``result``). Component references become local ``$defs``, and OpenAPI 3.0's
``nullable`` becomes JSON Schema's ``null`` type, so that the validation ladder checks them as written.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ..server.definition_errors import DefinitionError
from ..server.tools.definition import Tool
from ..server.tools.registry import ToolRegistry

_ANNOTATIONS = {
    "GET": {"readOnlyHint": True},
    "HEAD": {"readOnlyHint": True},
    "PUT": {"idempotentHint": True},
    "DELETE": {"destructiveHint": True, "idempotentHint": True},
}


def register_operation(
    target: ToolRegistry,
    handler: Callable[..., Any],
    *,
    name: str,
    method: str,
    description: str | None,
    input_schema: Mapping[str, Any],
    output_schema: Mapping[str, Any] | None,
    tool_options: Mapping[str, Any],
) -> Tool:
    """Register an HTTP operation's tool: its method's annotations (``GET`` reads, ``DELETE`` destroys) under
    the caller's own, and the rest of the caller's options (``task_support``, ``permissions`` ...)."""
    target.register(
        handler,
        name=name,
        description=description,
        input_schema=input_schema,
        output_schema=output_schema,
        annotations={**_ANNOTATIONS.get(method, {}), **tool_options.get("annotations", {})},
        **{key: value for key, value in tool_options.items() if key != "annotations"},
    )
    tool = target.get(name)
    assert tool is not None
    return tool


def tool_input_schema(
    tool_name: str, operation: Mapping[str, Any], definitions: Mapping[str, Any]
) -> tuple[dict[str, Any], dict[str, str]]:
    """The tool's input schema, and where each argument goes (``"path"`` or ``"query"``; the body is ``body``)."""
    properties: dict[str, Any] = {}
    required: list[str] = []
    located: dict[str, str] = {}
    for parameter in operation.get("parameters", []):
        where, name = parameter["in"], parameter["name"]
        if where not in ("path", "query"):
            raise DefinitionError(f"Tool {tool_name!r}: the operation takes {name!r} from the {where}")
        properties[name] = json_schema(dict(parameter.get("schema", {})))
        if parameter.get("description"):
            properties[name].setdefault("description", parameter["description"])
        located[name] = where
        if parameter.get("required"):
            required.append(name)
    body = operation.get("requestBody")
    if body is not None:
        content = body.get("content", {})
        if "application/json" not in content:
            raise DefinitionError(f"Tool {tool_name!r}: the operation takes {', '.join(content)}; only JSON bodies")
        if "body" in properties:
            raise DefinitionError(f"Tool {tool_name!r}: a parameter named 'body' would hide the request body")
        properties["body"] = json_schema(content["application/json"]["schema"])
        if body.get("required"):
            required.append("body")
    schema: dict[str, Any] = {"type": "object", "properties": properties, "additionalProperties": False}
    if required:
        schema["required"] = required
    return _with_definitions(schema, definitions), located


def output_schema(responses: Mapping[Any, Any], definitions: Mapping[str, Any]) -> tuple[dict[str, Any] | None, bool]:
    """The tool's output schema from the first 2xx JSON response (None: no JSON), and whether it is wrapped
    in ``result``; a reference to an object schema is replaced by that schema."""
    for status in sorted(str(code) for code in responses if str(code).startswith("2")):
        response = responses.get(status, responses.get(int(status), {}))
        schema = response.get("content", {}).get("application/json", {}).get("schema")
        if schema is None:
            return None, False
        schema = json_schema(schema)
        ref = schema.get("$ref", "")
        target = definitions.get(ref.rsplit("/", 1)[-1], {}) if ref.startswith("#/components/schemas/") else schema
        if target.get("type") == "object":
            return _with_definitions(dict(target), definitions), False
        wrapped = {"type": "object", "properties": {"result": schema}, "required": ["result"]}
        return _with_definitions(wrapped, definitions), True
    return None, False


def json_schema(schema: Any) -> Any:
    """``schema`` with OpenAPI 3.0's ``nullable: true`` said the JSON Schema way (DRF writes it; ninja does not)."""
    if isinstance(schema, list):
        return [json_schema(value) for value in schema]
    if not isinstance(schema, dict):
        return schema
    converted = {key: json_schema(value) for key, value in schema.items() if key != "nullable"}
    if schema.get("nullable") is True:
        kind = converted.get("type")
        if isinstance(kind, str):
            converted["type"] = [kind, "null"]
            if "enum" in converted:
                converted["enum"] = [*converted["enum"], None]
        elif kind is None:
            return {"anyOf": [converted, {"type": "null"}]}
    return converted


def _with_definitions(schema: dict[str, Any], definitions: Mapping[str, Any]) -> dict[str, Any]:
    """``schema`` with the component schemas it uses as ``$defs``, every reference made local to it."""
    used = _referenced(schema, definitions)
    if used:
        schema = {**schema, "$defs": {name: json_schema(definitions[name]) for name in sorted(used)}}
    return dict(_local_refs(schema))


def _referenced(schema: Any, definitions: Mapping[str, Any], seen: set[str] | None = None) -> set[str]:
    """The component schemas ``schema`` refers to, directly or through each other."""
    seen = set() if seen is None else seen
    if isinstance(schema, dict):
        ref = schema.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/components/schemas/"):
            name = ref.rsplit("/", 1)[1]
            if name not in seen and name in definitions:
                seen.add(name)
                _referenced(definitions[name], definitions, seen)
        for value in schema.values():
            _referenced(value, definitions, seen)
    elif isinstance(schema, list):
        for value in schema:
            _referenced(value, definitions, seen)
    return seen


def _local_refs(schema: Any) -> Any:
    """``schema`` with OpenAPI's ``#/components/schemas/X`` references pointing at ``#/$defs/X``."""
    if isinstance(schema, dict):
        return {
            key: (
                value.replace("#/components/schemas/", "#/$defs/")
                if key == "$ref" and isinstance(value, str)
                else _local_refs(value)
            )
            for key, value in schema.items()
        }
    if isinstance(schema, list):
        return [_local_refs(value) for value in schema]
    return schema
