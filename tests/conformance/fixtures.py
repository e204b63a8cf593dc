"""The conformance suite's fixture tools for the core, tools, transport and HTTP-header groups.

Names, arguments and behaviour follow the fixture inventory of the official
suite (``@modelcontextprotocol/conformance`` 0.2.0-alpha.12, see
the conformance notes (``shared/conformance/README.md`` §2.1)). Registration order is the
``tools/list`` order, and it matters: ``http-header-validation`` calls the
*first* listed tool with ``arguments: {}``, so that tool must take no
arguments.

Resources, prompts and completion are in ``resources_prompts.py``, MRTR
(``test_input_required_result_*``) in ``mrtr.py`` and the list-change hooks in
``triggers.py``; all are imported from ``apps.py`` after this module. Tasks
fixtures are not here yet.
"""

from __future__ import annotations

import asyncio
import base64
import io
import struct
import wave
import zlib
from functools import cache
from typing import Any

from django_mcp import McpRequest, ToolError, tool
from django_mcp.protocol.errors import missing_capability

SIMPLE_TEXT = "This is a simple text response for testing."
EMBEDDED_RESOURCE_URI = "test://embedded-resource"


# -- media -----------------------------------------------------------------------


@cache
def tiny_png() -> str:
    """A real 1x1 RGBA PNG (one opaque red pixel), base64-encoded."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", 1, 1, 8, 6, 0, 0, 0)  # 1x1, 8-bit, RGBA, deflate, no filter, no interlace
    scanline = b"\x00" + bytes((255, 0, 0, 255))  # filter byte 0, then one pixel
    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(scanline)) + chunk(b"IEND", b"")
    return base64.b64encode(png).decode("ascii")


@cache
def tiny_wav() -> str:
    """A real WAV file: 10 ms of silence, 8 kHz, mono, 16-bit PCM, base64-encoded."""
    buf = io.BytesIO()
    with wave.open(buf, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(8000)
        w.writeframes(b"\x00\x00" * 80)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def image_block() -> dict[str, Any]:
    return {"type": "image", "data": tiny_png(), "mimeType": "image/png"}


def embedded_resource_block() -> dict[str, Any]:
    return {
        "type": "resource",
        "resource": {
            "uri": EMBEDDED_RESOURCE_URI,
            "mimeType": "text/plain",
            "text": "This is an embedded resource content.",
        },
    }


# -- tools group (tools-list, tools-call-*) -----------------------------------------
# Kept first: http-header-validation calls the first listed tool with {}.


@tool(description="Returns a simple text response (no arguments).")
def test_simple_text(request: McpRequest) -> str:
    return SIMPLE_TEXT


@tool(description="Returns one image content item: a 1x1 PNG.")
def test_image_content(request: McpRequest) -> list[dict[str, Any]]:
    return [image_block()]


@tool(description="Returns one audio content item: a short WAV.")
def test_audio_content(request: McpRequest) -> list[dict[str, Any]]:
    return [{"type": "audio", "data": tiny_wav(), "mimeType": "audio/wav"}]


@tool(description="Returns one embedded text resource (test://embedded-resource).")
def test_embedded_resource(request: McpRequest) -> list[dict[str, Any]]:
    return [embedded_resource_block()]


@tool(description="Returns text, image and embedded-resource content together.")
def test_multiple_content_types(request: McpRequest) -> list[dict[str, Any]]:
    return [
        {"type": "text", "text": "Multiple content types test:"},
        image_block(),
        embedded_resource_block(),
    ]


@tool(description="Always fails as a tool-execution error (isError: true), not a JSON-RPC error.")
def test_error_handling(request: McpRequest) -> str:
    raise ToolError("This tool intentionally returns an error for testing")


@tool(description="Reports progress 0, 50 and 100 of 100, about 50 ms apart, when given a progressToken.")
async def test_tool_with_progress(request: McpRequest) -> str:
    for step, progress in enumerate((0, 50, 100)):
        if step:
            await asyncio.sleep(0.05)
        request.progress(progress, total=100, message=f"Completed step {step + 1} of 3")
    return "Progress test completed: 3 steps"


# The schema of json-schema-2020-12, served byte-for-byte: $schema, $defs with
# $anchor, $ref, allOf/anyOf, if/then/else and additionalProperties: false.
JSON_SCHEMA_2020_12: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "$anchor": "addressDef",
            "type": "object",
            "properties": {
                "street": {"type": "string"},
                "city": {"type": "string"},
            },
        }
    },
    "properties": {
        "name": {"type": "string"},
        "address": {"$ref": "#/$defs/address"},
        "contactMethod": {"type": "string", "enum": ["phone", "email"]},
        "phone": {"type": "string"},
        "email": {"type": "string"},
    },
    "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
    "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
    "then": {"required": ["phone"]},
    "else": {"required": ["email"]},
    "additionalProperties": False,
}


@tool(
    name="json_schema_2020_12_tool",
    description="Tool with JSON Schema 2020-12 features",
    input_schema=JSON_SCHEMA_2020_12,
)
def json_schema_2020_12_tool(request: McpRequest, **arguments: Any) -> str:
    return f"Received: {sorted(arguments)}"


# -- core group (server-stateless) ------------------------------------------------


@tool(description="Needs the client's sampling capability: -32021 when the request did not declare it.")
def test_missing_capability(request: McpRequest) -> str:
    if "sampling" not in request.client_capabilities:
        raise missing_capability({"sampling": {}}, "This tool requires the client's sampling capability")
    return "The request declared the sampling capability."


@tool(
    description=(
        "Called by clients that declare elicitation. In 2026-07-28 a server never sends a "
        "server-to-client request on the response stream, so this only answers with text."
    )
)
async def test_streaming_elicitation(request: McpRequest) -> str:
    request.log("info", "test_streaming_elicitation started")  # only sent if logLevel was requested
    return "Streaming elicitation test completed without server-to-client requests."


@tool(description="Logs at several levels; nothing is sent unless the request set a logLevel in _meta.")
async def test_logging_tool(request: McpRequest) -> str:
    for level in ("debug", "info", "warning"):
        request.log(level, f"test_logging_tool: {level} message", logger="conformance")
        await asyncio.sleep(0.01)
    return "Logging test completed"


# -- http-headers group (http-custom-header-server-validation) ----------------------
# The suite picks the first tool with an x-mcp-header property, then its first
# string-typed one; keep this the only annotated tool.

HEADER_TOOL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "region": {
            "type": "string",
            "description": "Mirrored into the Mcp-Param-Region request header.",
            "x-mcp-header": "Region",
        },
    },
    "required": ["region"],
}


@tool(
    name="test_header_param",
    description="Echoes its region argument, which clients mirror into the Mcp-Param-Region header.",
    input_schema=HEADER_TOOL_SCHEMA,
)
def test_header_param(request: McpRequest, region: str) -> str:
    return f"region={region}"
