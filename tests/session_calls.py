"""Handshake-era calls in-process: initialize a session, then call in it."""

from __future__ import annotations

import json
from typing import Any

from tests.wire import initialize_body, sse_messages

HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


async def initialize(client, *, version="2025-11-25", capabilities=None, path="/mcp/") -> tuple[str, dict[str, Any]]:
    body = initialize_body(version, capabilities if capabilities is not None else {"elicitation": {}}, "legacy-tests")
    response = await post(client, body, path=path)
    assert response.status_code == 200, response.content
    await post(
        client, {"jsonrpc": "2.0", "method": "notifications/initialized"}, path=path, session=response["Mcp-Session-Id"]
    )
    return response["Mcp-Session-Id"], json.loads(response.content)["result"]


async def post(client, body, *, path="/mcp/", session=None, version="2025-11-25", headers=None):
    hdrs = dict(HEADERS)
    if session is not None:
        hdrs["Mcp-Session-Id"] = session
    if version is not None and session is not None:
        hdrs["MCP-Protocol-Version"] = version
    hdrs.update(headers or {})
    return await client.post(path, data=json.dumps(body), content_type=hdrs.pop("Content-Type"), headers=hdrs)


async def rpc(client, session, method, params=None, *, id=1, path="/mcp/", **kw) -> Any:
    response = await post(
        client, {"jsonrpc": "2.0", "id": id, "method": method, "params": params or {}}, path=path, session=session, **kw
    )
    if response["Content-Type"] == "text/event-stream":
        return response.status_code, (await sse_messages(response))[-1]
    return response.status_code, json.loads(response.content)
