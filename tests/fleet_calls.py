"""Calling the worker-fleet test server in-process."""

from __future__ import annotations

import json
from typing import Any

from django_mcp.tasks import EXTENSION_ID
from tests.wire import post, request_body

CLIENT = {"elicitation": {}, "extensions": {EXTENSION_ID: {}}}


NAMESPACE = "mcp_fleet"


PATH = "/mcp-fleet/"


TENANT = {"X-Tenant": "unit"}


async def create(client, tool, arguments=None) -> dict[str, Any]:
    return (await rpc(client, "tools/call", {"name": tool, "arguments": arguments or {}}, status=200))["result"]


async def rpc(client, method, params=None, *, status=None, headers=TENANT) -> dict[str, Any]:
    body = request_body(method, params, capabilities=CLIENT)
    response = await post(client, body, path=PATH, headers=headers)
    if status is not None:
        assert response.status_code == status, response.content
    return json.loads(response.content)
