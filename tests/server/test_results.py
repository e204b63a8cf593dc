"""What a tool's return value becomes: the ``CallToolResult`` a client gets, or -32603 for a bad one."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from django_mcp.protocol.errors import McpJsonRpcError
from django_mcp.server.results import RawResult, call_tool_result
from django_mcp.server.tools.definition import Tool

POINT = {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}


def tool(output_schema: dict[str, Any] | None = None) -> Tool:
    return Tool(name="t", handler=lambda: None, input_schema={"type": "object"}, output_schema=output_schema)


class Point(BaseModel):
    x: int


@pytest.mark.parametrize(
    ("value", "schema", "result"),
    [
        ("hi", None, {"content": [{"type": "text", "text": "hi"}]}),
        ([{"type": "text", "text": "a"}], None, {"content": [{"type": "text", "text": "a"}]}),
        (None, None, {"content": []}),
        (3, None, {"content": [{"type": "text", "text": "3"}]}),
        (Point(x=1), None, {"content": [{"type": "text", "text": '{"x":1}'}], "structuredContent": {"x": 1}}),
        ({"x": 2}, POINT, {"content": [{"type": "text", "text": '{"x":2}'}], "structuredContent": {"x": 2}}),
        ({"content": [], "isError": True}, POINT, {"content": [], "isError": True}),  # an error needs no structure
        (RawResult(resultType="task", task={"taskId": "t"}), None, {"resultType": "task", "task": {"taskId": "t"}}),
    ],
)
def test_each_kind_of_value_becomes_its_result(value, schema, result):
    assert call_tool_result(tool(schema), value) == result


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("just text", "returned no structuredContent"),
        ({"x": "one"}, "does not match the outputSchema at"),
    ],
)
def test_a_result_the_output_schema_refuses_is_32603(value, why, caplog):
    with pytest.raises(McpJsonRpcError) as raised:
        call_tool_result(tool(POINT), value)
    assert raised.value.code == -32603 and raised.value.message.startswith("Tool 't' produced an invalid result: ")
    assert why in raised.value.message and why in caplog.text  # a server bug: logged too
