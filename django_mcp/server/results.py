"""Turning what a tool handler returns (or raises) into a ``CallToolResult``."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from django.db import DatabaseError
from pydantic import BaseModel

from ..protocol.errors import INTERNAL_ERROR, McpJsonRpcError
from ..protocol.jsonrpc import dumps

if TYPE_CHECKING:
    from .tools.definition import Tool

logger = logging.getLogger("django_mcp")


class ToolError(Exception):
    """Raise from a tool handler to answer ``isError: true`` with exactly this message.

    Any other ordinary exception gives an ``isError`` result too, naming the
    exception type; its traceback is logged, never sent.
    """


class RawResult(dict[str, Any]):
    """A result a tool returns as is, not as ``CallToolResult`` (e.g. an extension's ``CreateTaskResult``)."""


def text_content(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def error_result(text: str) -> dict[str, Any]:
    """A tool-execution failure the model can see and react to."""
    return {"content": [text_content(text)], "isError": True}


def exception_result(tool: Tool, exc: Exception) -> dict[str, Any]:
    """The ``isError`` result for an exception a handler raised (traceback logged)."""
    if isinstance(exc, ToolError):
        return error_result(str(exc))
    logger.error("Tool %r raised %s", tool.name, type(exc).__name__, exc_info=exc)
    if isinstance(exc, DatabaseError):  # driver text (SQL fragments, hosts) is logged, never sent
        return error_result(f"Tool {tool.name!r} failed: a database error ({type(exc).__name__})")
    return error_result(f"Tool {tool.name!r} failed: {type(exc).__name__}: {exc}")


def call_tool_result(tool: Tool, value: Any) -> dict[str, Any]:
    """Normalise a handler's return value into a ``CallToolResult``.

    * a dict with ``content`` is already a result (``structuredContent``,
      ``isError``, ``_meta`` kept);
    * a string is one text block; a list is the content blocks;
    * a pydantic model, or any other JSON value when the tool declares an
      ``outputSchema``, becomes ``structuredContent`` plus its JSON as text.

    Structured content is checked against the output schema; a mismatch is a
    server bug and answers -32603.
    """
    if isinstance(value, RawResult):
        return dict(value)
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json", by_alias=True)
        result = {"content": [text_content(dumps(value))], "structuredContent": value}
    elif isinstance(value, dict) and "content" in value:
        result = dict(value)
    elif isinstance(value, str):
        result = {"content": [text_content(value)]}
    elif isinstance(value, list):
        result = {"content": value}
    elif tool.output_schema is not None:
        result = {"content": [text_content(dumps(value))], "structuredContent": value}
    elif value is None:
        result = {"content": []}
    else:
        result = {"content": [text_content(dumps(value))]}
    if tool.output_schema is not None and not result.get("isError"):
        if "structuredContent" not in result:
            raise _bad_output(tool, "the tool declares an outputSchema but returned no structuredContent")
        problem = tool.output_error(result["structuredContent"])
        if problem is not None:
            raise _bad_output(tool, f"structuredContent does not match the outputSchema at {problem}")
    return result


def _bad_output(tool: Tool, why: str) -> McpJsonRpcError:
    logger.error("Tool %r: %s", tool.name, why)
    return McpJsonRpcError(INTERNAL_ERROR, f"Tool {tool.name!r} produced an invalid result: {why}")
