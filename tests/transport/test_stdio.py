"""The stdio session in-process: lines in, lines out, through the same fronts as HTTP (tests/live/test_stdio.py
starts ``manage.py mcp_stdio`` with real clients)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from django.contrib.auth.models import AnonymousUser, User

from django_mcp.endpoint import server_at
from django_mcp.transport.stdio import StdioSession, aread_lines
from tests.toolapp.tools import EVENTS

pytestmark = pytest.mark.django_db(transaction=True)

META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}


def call(request_id: Any, name: str, arguments: dict[str, Any]) -> bytes:
    params = {"name": name, "arguments": arguments, "_meta": META}
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}).encode()


class Client:
    """Feeds a session line by line (``send``), keeps what it writes (``out``); ``aend`` closes the input."""

    def __init__(self, user: Any = None, path: str = "/mcp") -> None:
        server = server_at(path)
        assert server is not None
        self.out: list[Any] = []
        self.session = StdioSession(server, user or AnonymousUser(), lambda line: self.out.append(json.loads(line)))
        self.queue: asyncio.Queue[bytes | None] = asyncio.Queue()
        self.serving = asyncio.create_task(self.session.aserve(self._lines()))

    async def _lines(self) -> AsyncIterator[bytes | None]:
        while (line := await self.queue.get()) != b"EOF":
            yield line

    async def send(self, *lines: bytes | None) -> None:
        for line in lines:
            await self.queue.put(line)

    async def answer(self, request_id: Any) -> Any:
        async with asyncio.timeout(10):  # a hang guard, not a measure
            while True:
                found = [m for m in self.out if m.get("id") == request_id and ("result" in m or "error" in m)]
                if found:
                    return found[0]
                await asyncio.sleep(0.01)

    async def aend(self) -> None:
        await self.queue.put(b"EOF")
        async with asyncio.timeout(20):
            await self.serving


async def test_tools_answer_and_the_routing_headers_come_from_the_message():
    client = Client()
    await client.send(call(1, "add", {"a": 2, "b": 3}), call(2, "routed", {"region": "eu", "limit": 5, "dry": True}))
    assert (await client.answer(1))["result"]["content"][0]["text"] == "5"
    assert (await client.answer(2))["result"]["content"][0]["text"] == "eu:5:True"  # Mcp-Param-* derived, matched
    await client.aend()


async def test_the_user_is_the_one_named_and_published_operations_see_them():
    alice = await User.objects.acreate(username="alice")
    for user, answer in ((alice, '{"username": "alice"}'), (None, "HTTP 401: Unauthorized")):
        client = Client(user, path="/mcp-publish")  # whoami: a django-ninja operation with django_auth
        await client.send(call(1, "whoami", {}))
        assert (await client.answer(1))["result"]["content"][0]["text"] == answer
        await client.aend()


async def test_notifications_cancelled_cancels_the_request_it_names():
    EVENTS.pop("sleepy", None)
    client = Client()
    await client.send(call("slow", "sleepy", {"seconds": 30}))
    async with asyncio.timeout(10):
        while EVENTS.get("sleepy") != "started":
            await asyncio.sleep(0.01)
    await client.send(
        json.dumps({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "slow"}}).encode()
    )
    async with asyncio.timeout(10):  # the tool sleeps 30 s: only the cancellation ends it before this
        while EVENTS.get("sleepy") != "cancelled":
            await asyncio.sleep(0.01)
    await client.send(call(2, "add", {"a": 1}))
    assert (await client.answer(2))["result"]["content"][0]["text"] == "1"
    await client.aend()
    assert not [m for m in client.out if m.get("id") == "slow"]


async def test_bad_lines_are_answered_with_errors_and_serving_goes_on():
    client = Client()
    await client.send(b"{nope", b"[]", None, b"   \n", call(3, "add", {"a": "x"}), call(4, "add", {"a": 4}))
    assert (await client.answer(4))["result"]["content"][0]["text"] == "4"
    assert (await client.answer(3))["error"]["code"] == -32602
    await client.aend()
    unaddressed = [m["error"] for m in client.out if m.get("id") is None]
    assert [e["code"] for e in unaddressed] == [-32700, -32600, -32600]
    assert unaddressed[2]["message"].startswith("Request too large")


@pytest.mark.parametrize("depth", [3_000, 100_000])
async def test_a_line_nested_too_deep_is_a_parse_error_and_serving_goes_on(depth):
    # The stdlib decoder recurses once per level: a RecursionError used to end the command with status 1.
    client = Client()
    await client.send(b"[" * depth + b"]" * depth, call(5, "add", {"a": 5}))
    assert (await client.answer(5))["result"]["content"][0]["text"] == "5"
    await client.aend()
    [refused] = [m["error"] for m in client.out if m.get("id") is None]
    assert refused["code"] == -32700 and "nested deeper than" in refused["message"]


async def test_an_id_still_in_flight_is_refused():
    EVENTS.pop("sleepy", None)
    client = Client()
    await client.send(call(1, "sleepy", {"seconds": 30}))
    async with asyncio.timeout(10):
        while EVENTS.get("sleepy") != "started":
            await asyncio.sleep(0.01)
    await client.send(call(1, "add", {"a": 1}))
    refused = await client.answer(1)
    assert (refused["error"]["code"], refused["error"]["message"]) == (
        -32600,
        "Invalid Request: that id is still in flight",
    )
    await client.send(
        json.dumps({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}).encode()
    )
    await client.aend()


async def test_the_handshake_era_keeps_its_session_between_lines():
    client = Client()
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    }
    plain_call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "add", "arguments": {"a": 7}}}
    await client.send(
        json.dumps(initialize).encode(),
        json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode(),
        json.dumps(plain_call).encode(),
    )
    assert (await client.answer(1))["result"]["protocolVersion"] == "2025-11-25"
    assert (await client.answer(2))["result"]["content"][0]["text"] == "7"
    assert client.session.session_id
    await client.aend()


async def test_an_open_listen_stream_ends_with_the_input():
    client = Client()
    listen = {
        "jsonrpc": "2.0",
        "id": "listen",
        "method": "subscriptions/listen",
        "params": {"notifications": {"toolsListChanged": True}, "_meta": META},
    }
    await client.send(json.dumps(listen).encode())
    async with asyncio.timeout(10):
        while not client.out:
            await asyncio.sleep(0.01)
    assert client.out[0]["method"] == "notifications/subscriptions/acknowledged"
    await client.aend()  # would hang if the stream stayed open


async def test_prompts_and_resources_are_served_too():
    client = Client(path="/mcp-content")  # a server with prompts and resources
    for number, method in enumerate(("prompts/list", "resources/list", "resources/templates/list"), start=1):
        await client.send(
            json.dumps({"jsonrpc": "2.0", "id": number, "method": method, "params": {"_meta": META}}).encode()
        )
    assert "prompts" in (await client.answer(1))["result"]
    assert "resources" in (await client.answer(2))["result"]
    assert "resourceTemplates" in (await client.answer(3))["result"]
    await client.aend()


async def test_long_lines_are_skipped_whole():
    reader = asyncio.StreamReader(limit=16)
    reader.feed_data(b'{"short": 1}\n' + b"x" * 100 + b"\n" + b'{"after": 2}\n{"last": 3}')
    reader.feed_eof()
    assert [line async for line in aread_lines(reader)] == [b'{"short": 1}\n', None, b'{"after": 2}\n', b'{"last": 3}']
