"""Helpers to speak the 2026-07-28 wire in tests, and to check frames against the official schemas."""

from __future__ import annotations

import base64
import json
from functools import cache
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator

VERSION = "2026-07-28"
SCHEMAS = Path(__file__).parent / "schemas"
_NAME_PARAMS = {
    "tools/call": "name",
    "prompts/get": "name",
    "resources/read": "uri",
    "tasks/get": "taskId",
    "tasks/update": "taskId",
    "tasks/cancel": "taskId",
}


def meta(capabilities: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    return {
        "io.modelcontextprotocol/protocolVersion": VERSION,
        "io.modelcontextprotocol/clientCapabilities": capabilities if capabilities is not None else {},
        "io.modelcontextprotocol/clientInfo": {"name": "tests", "version": "1"},
        **extra,
    }


def request_body(method: str, params: dict[str, Any] | None = None, *, id: Any = 1, **meta_extra: Any) -> dict:
    params = dict(params or {})
    params.setdefault("_meta", meta(**meta_extra))
    return {"jsonrpc": "2.0", "id": id, "method": method, "params": params}


def initialize_body(
    version: str = "2025-11-25", capabilities: dict[str, Any] | None = None, client: str = "tests"
) -> dict[str, Any]:
    """A handshake-era ``initialize`` request (id 0)."""
    params = {
        "protocolVersion": version,
        "capabilities": capabilities or {},
        "clientInfo": {"name": client, "version": "1"},
    }
    return {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params}


def headers_for(body: dict[str, Any]) -> dict[str, str]:
    """The headers a conforming client sends for ``body``."""
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": VERSION,
    }
    method = body.get("method")
    if isinstance(method, str) and "id" in body:
        headers["Mcp-Method"] = method
        name_param = _NAME_PARAMS.get(method)
        if name_param and isinstance(body.get("params", {}).get(name_param), str):
            headers["Mcp-Name"] = encode_header(body["params"][name_param])
    return headers


def encode_header(value: str) -> str:
    if all(0x20 <= ord(c) <= 0x7E for c in value) and value == value.strip() and not value.startswith("=?base64?"):
        return value
    return "=?base64?" + base64.b64encode(value.encode()).decode() + "?="


async def post(
    client: Any,
    body: Any,
    *,
    path: str = "/mcp/",
    headers: dict[str, str] | None = None,
    drop: tuple[str, ...] = (),
) -> Any:
    """POST ``body`` (a dict, or raw bytes) with conforming headers, overridden by ``headers``."""
    hdrs = (
        headers_for(body)
        if isinstance(body, dict)
        else {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": VERSION,
        }
    )
    hdrs.update(headers or {})
    for name in drop:
        hdrs.pop(name, None)
    data = body if isinstance(body, bytes | str) else json.dumps(body)
    content_type = hdrs.pop("Content-Type", None)
    kwargs: dict[str, Any] = {"headers": hdrs}
    if content_type is not None:
        kwargs["content_type"] = content_type
    else:
        kwargs["content_type"] = ""
    return await client.post(path, data=data, **kwargs)


async def call(client: Any, method: str, params: dict[str, Any] | None = None, **kwargs: Any) -> dict[str, Any]:
    """A conforming request; returns the decoded JSON-RPC response (JSON responses only)."""
    meta_extra = kwargs.pop("meta_extra", {})
    body = request_body(method, params, id=kwargs.pop("id", 1), **meta_extra)
    response = await post(client, body, **kwargs)
    assert response["Content-Type"].startswith("application/json"), response["Content-Type"]
    return json.loads(response.content)


async def sse_messages(response: Any) -> list[dict[str, Any]]:
    """The JSON-RPC messages of a streamed SSE response."""
    assert response["Content-Type"] == "text/event-stream"
    raw = b"".join([chunk async for chunk in response.streaming_content])
    messages = []
    for block in raw.decode().split("\n\n"):
        data = [line[len("data: ") :] for line in block.splitlines() if line.startswith("data: ")]
        if data:
            messages.append(json.loads("\n".join(data)))
    return messages


@cache
def _schema(file: str) -> dict[str, Any]:
    return json.loads((SCHEMAS / file).read_text())


@cache
def _validator(definition: str, file: str) -> Draft202012Validator:
    doc = _schema(file)
    return Draft202012Validator({"$defs": doc["$defs"], "$ref": f"#/$defs/{definition}"})


def assert_wire(frame: dict[str, Any], definition: str, file: str = "core-2026-07-28.schema.json") -> None:
    """Fail unless ``frame`` validates against the official schema definition ``definition``."""
    errors = sorted(_validator(definition, file).iter_errors(frame), key=lambda e: list(e.absolute_path))
    assert not errors, f"{definition}: " + "; ".join(f"{list(e.absolute_path)}: {e.message}" for e in errors[:5])


def asgi_scope(
    body: dict[str, Any],
    headers: dict[str, str] | None = None,
    host: str = "testserver",
    *,
    path: str = "/mcp/",
    client: tuple[str, int] = ("127.0.0.1", 5000),
    modern: bool = True,
) -> dict[str, Any]:
    """The ASGI ``http`` scope of a POST of ``body`` (for tests that drive the application directly):
    a 2026-07-28 client's headers for it unless ``modern`` is False (a handshake-era ``initialize``)."""
    plain = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    sent = {**(headers_for(body) if modern else plain), **(headers or {})}
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [(b"host", host.encode())] + [(k.lower().encode(), v.encode()) for k, v in sent.items()],
        "client": client,
        "server": ("127.0.0.1", 80),
    }


class AsgiAnswer:
    """An HTTP answer of the ASGI application: status, headers (lower-case names), body."""

    def __init__(self, status: int, headers: dict[str, str], content: bytes) -> None:
        self.status_code, self.headers, self.content = status, headers, content

    def __getitem__(self, name: str) -> str:
        return self.headers[name.lower()]

    def __contains__(self, name: str) -> bool:
        return name.lower() in self.headers

    def json(self) -> Any:
        return json.loads(self.content)


async def asgi_exchange(scope: dict[str, Any], body: bytes, application: Any = None) -> AsgiAnswer:
    """Send ``body`` through an ASGI application (Django's by default) in ``scope``; the whole answer."""
    from asgiref.testing import ApplicationCommunicator
    from django.core.asgi import get_asgi_application

    communicator = ApplicationCommunicator(application or get_asgi_application(), scope)
    await communicator.send_input({"type": "http.request", "body": body})
    start = await communicator.receive_output(timeout=5)
    content = b""
    while True:
        message = await communicator.receive_output(timeout=5)
        content += message.get("body", b"")
        if not message.get("more_body"):
            break
    await communicator.wait(timeout=5)
    return AsgiAnswer(start["status"], {k.decode().lower(): v.decode() for k, v in start["headers"]}, content)


async def post_from(
    address: str, body: dict[str, Any], path: str, headers: dict[str, str] | None = None, *, modern: bool = True
) -> AsgiAnswer:
    """POST ``body`` as a client at ``address`` (the scope's client: ``REMOTE_ADDR``, which Django's
    test clients cannot set)."""
    scope = asgi_scope(body, headers, path=path, client=(address, 50000), modern=modern)
    return await asgi_exchange(scope, json.dumps(body).encode())


async def open_session(client: Any, path: str, token: str) -> dict[str, str]:
    """Initialize a handshake-era session (2025-11-25) with a bearer token; the headers of its later requests."""
    headers = {"Accept": "application/json, text/event-stream", "Authorization": f"Bearer {token}"}
    body = json.dumps(initialize_body("2025-11-25", {}, "legacy"))
    opened = await client.post(path, data=body, content_type="application/json", headers=headers)
    return {**headers, "Mcp-Session-Id": opened["Mcp-Session-Id"], "MCP-Protocol-Version": "2025-11-25"}
