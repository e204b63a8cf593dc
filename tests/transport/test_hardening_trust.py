"""Regression tests for the "Hardening" issue, trust rules: ``ALLOWED_HOSTS = ["*"]`` and the same-origin rule.

The same-origin rule compares the Origin header with the Host header. With ``"*"`` in
``ALLOWED_HOSTS`` Django accepts any Host, so a DNS-rebinding page (``http://evil.example:8000``
resolving to the server) sends a matching pair: the view must not trust it, and check
``django_mcp.W008`` says so at deploy time.
"""

from __future__ import annotations

import json

import pytest
from django.core import checks
from django.test import override_settings

from tests.wire import asgi_exchange, asgi_scope, request_body

REBINDING = {"Origin": "http://evil.example:8000"}


async def _discover(headers, host="evil.example:8000"):
    """POST server/discover through the ASGI application with this Host header (the test client adds its own)."""
    body = request_body("server/discover")
    return await asgi_exchange(asgi_scope(body, headers, host), json.dumps(body).encode())


@override_settings(ALLOWED_HOSTS=["*"])
async def test_with_any_host_allowed_a_matching_origin_and_host_is_not_same_origin():
    response = await _discover(REBINDING)
    assert response.status_code == 403
    error = json.loads(response.content)["error"]
    assert error["code"] == -32600 and "Origin" in error["message"]


@override_settings(ALLOWED_HOSTS=["*"])
async def test_with_any_host_allowed_listed_origins_and_clients_without_origin_still_pass():
    from django.conf import settings

    assert (await _discover({})).status_code == 200  # SDKs, CLIs: no Origin header
    # Nested override_settings, not pytest-django's `settings` fixture: that one would restore the
    # decorator's ALLOWED_HOSTS=["*"] after the decorator ended, leaking it into later tests.
    with override_settings(DJANGO_MCP={**settings.DJANGO_MCP, "ALLOWED_ORIGINS": ["https://app.example"]}):
        listed = await _discover({"Origin": "https://app.example"}, host="app.example")
    assert listed.status_code == 200


@override_settings(ALLOWED_HOSTS=["*"], DEBUG=True)
async def test_with_any_host_allowed_loopback_still_passes_under_debug():
    response = await _discover({"Origin": "http://localhost:3000"}, host="localhost:3000")
    assert response.status_code == 200


@override_settings(ALLOWED_HOSTS=["mcp.example"])
async def test_a_pinned_host_keeps_the_same_origin_rule():
    assert (await _discover({"Origin": "http://mcp.example"}, host="mcp.example")).status_code == 200
    assert (await _discover(REBINDING, host="mcp.example")).status_code == 403


def _w008(**overrides):
    from django_mcp.checks import check_allowed_hosts

    with override_settings(**overrides):
        return check_allowed_hosts()


def test_w008_any_host_outside_debug_without_listed_origins():
    [message] = _w008(ALLOWED_HOSTS=["*"], DEBUG=False, DJANGO_MCP={})
    assert message.id == "django_mcp.W008" and message.level == checks.WARNING
    assert "DNS-rebinding" in message.msg and "ALLOWED_ORIGINS" in message.hint


@pytest.mark.parametrize(
    "overrides",
    [
        {"ALLOWED_HOSTS": ["*"], "DEBUG": True, "DJANGO_MCP": {}},
        {"ALLOWED_HOSTS": ["*"], "DEBUG": False, "DJANGO_MCP": {"ALLOWED_ORIGINS": ["https://app.example"]}},
        {"ALLOWED_HOSTS": ["*"], "DEBUG": False, "DJANGO_MCP": {"ALLOWED_ORIGINS": ["*"]}},  # that is W003
        {"ALLOWED_HOSTS": ["mcp.example", ".example.com"], "DEBUG": False, "DJANGO_MCP": {}},
        {"ALLOWED_HOSTS": ["*"], "DEBUG": False, "DJANGO_MCP": {"PAGE_SIZE": 0}},  # that is E002
    ],
)
def test_no_w008(overrides):
    assert _w008(**overrides) == []


def test_w008_is_registered_for_deploy_checks():
    from django.core.checks import registry

    from django_mcp.checks import check_allowed_hosts

    assert check_allowed_hosts in registry.registry.registered_checks
    assert list(check_allowed_hosts.tags) == [checks.Tags.security]
