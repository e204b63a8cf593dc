"""A listen stream over real HTTP, and the tenant and capabilities the multi-process tests call with."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx

from tests.wire import headers_for, request_body

EXT = {"extensions": {"io.modelcontextprotocol/tasks": {}}, "elicitation": {}}


TENANT = {"X-Tenant": "live"}


class Listen:
    """A listen stream over real HTTP, read frame by frame."""

    def __init__(self, client: httpx.AsyncClient, url: str, notifications: dict[str, Any]) -> None:
        body = request_body("subscriptions/listen", {"notifications": notifications}, id="live", capabilities=EXT)
        self._cm = client.stream(
            "POST", url, content=json.dumps(body), headers={**headers_for(body), **TENANT}, timeout=30
        )
        self._lines: Any = None

    async def __aenter__(self) -> Listen:
        response = await self._cm.__aenter__()
        assert response.headers["content-type"] == "text/event-stream"
        self._lines = response.aiter_lines()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self._cm.__aexit__(*exc)

    async def frame(self, timeout: float = 10.0) -> dict[str, Any]:
        async def read() -> dict[str, Any]:
            async for line in self._lines:
                if line.startswith("data: "):
                    return json.loads(line[6:])
            raise EOFError("stream ended")

        return await asyncio.wait_for(read(), timeout)
