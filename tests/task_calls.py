"""Calling task tools in-process: create a task, read it, wait for it."""

from __future__ import annotations

import asyncio
import hashlib
import json
from typing import Any

from django_mcp.tasks import EXTENSION_ID
from tests.wire import post, request_body

EXT = {"extensions": {EXTENSION_ID: {}}}
CLIENT = {"elicitation": {}, **EXT}  # what the tests' client declares unless told otherwise


async def create(client, tool, arguments=None, **kw) -> dict[str, Any]:
    body = await rpc(client, "tools/call", {"name": tool, "arguments": arguments or {}}, status=200, **kw)
    return body["result"]


async def get(client, task_id, **kw) -> dict[str, Any]:
    return await rpc(client, "tasks/get", {"taskId": task_id}, **kw)


def owner_key(namespace: str, principal: str) -> str:
    return "sha256:" + hashlib.sha256(f"{namespace}\0{principal}".encode()).hexdigest()


async def rpc(client, method, params=None, *, path="/mcp-tasks/", caps=CLIENT, headers=None, status=None, **meta):
    body = request_body(method, params, capabilities=caps, **meta)
    response = await post(client, body, path=path, headers=headers)
    if status is not None:
        assert response.status_code == status, response.content
    return json.loads(response.content)


async def wait_for(client, task_id, *statuses, timeout=5.0, **kw) -> dict[str, Any]:
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        result = (await get(client, task_id, **kw))["result"]
        if result["status"] in statuses:
            return result
        assert asyncio.get_running_loop().time() < deadline, f"still {result['status']}, wanted {statuses}"
        await asyncio.sleep(0.02)


def error_of(body: dict[str, Any]) -> dict[str, Any]:
    """The JSON-RPC error of ``body`` (which must be one)."""
    assert "error" in body, body
    return body["error"]
