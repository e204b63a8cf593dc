"""McpRequest, the handler's view of a request: what it refuses to do, and what it sends."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import RequestFactory

from django_mcp import McpRequest
from django_mcp.protocol.jsonrpc import RequestMeta


def request(method: str = "tools/call", meta: dict[str, Any] | None = None) -> McpRequest:
    said = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        **(meta or {}),
    }
    return McpRequest(
        RequestFactory().post("/"), request_id=1, method=method, params={}, meta=RequestMeta.model_validate(said)
    )


def test_client_input_is_asked_for_in_the_methods_that_take_it_only():
    with pytest.raises(RuntimeError, match="Client input can only be asked for in"):
        request("tools/list").input_rounds  # noqa: B018


async def test_progress_must_increase():
    sent: list[dict[str, Any]] = []
    req = request(meta={"progressToken": "p"})
    req.set_sink(sent.append)
    req.progress(1, 10)
    with pytest.raises(ValueError, match="progress must increase: 1 after 1"):
        req.progress(1, 10)
    assert [m["params"]["progress"] for m in sent] == [1]


def test_an_unknown_log_level_is_refused():
    with pytest.raises(ValueError, match="unknown log level 'loud'; use one of debug, info, notice"):
        request().log("loud", "hello")
