"""Endpoint auth: a django-ninja Bearer auth, the 401 with WWW-Authenticate, the principal in handlers."""

import json

from django.test import override_settings

from tests.wire import assert_wire, call, post, request_body


async def test_missing_token_is_401_with_www_authenticate(async_client):
    response = await post(async_client, request_body("server/discover", id=4), path="/mcp-bearer/")
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == "Bearer"
    body = json.loads(response.content)
    assert_wire(body, "JSONRPCErrorResponse")
    assert body["error"]["code"] == -32600


async def test_wrong_token_is_401(async_client):
    response = await post(
        async_client, request_body("server/discover"), path="/mcp-bearer/", headers={"Authorization": "Bearer nope"}
    )
    assert response.status_code == 401


@override_settings(DJANGO_MCP={"WWW_AUTHENTICATE": 'Bearer resource_metadata="https://x.example/.well-known/oauth"'})
async def test_www_authenticate_is_configurable(async_client):
    response = await post(async_client, request_body("server/discover"), path="/mcp-bearer/")
    assert response["WWW-Authenticate"] == 'Bearer resource_metadata="https://x.example/.well-known/oauth"'


async def test_principal_reaches_the_handler(async_client):
    for token, principal in (("alice-token", "alice"), ("bob-token", "bob")):
        r = await call(
            async_client,
            "tools/call",
            {"name": "whoami"},
            path="/mcp-bearer/",
            headers={"Authorization": f"Bearer {token}"},
        )
        assert r["result"]["content"][0]["text"] == repr(principal)


@override_settings(DJANGO_MCP={"AUTH": "tests.servers.TokenAuth"})
async def test_auth_from_settings_guards_a_server_without_explicit_auth():
    from ninja.testing import TestAsyncClient

    from django_mcp import McpServer
    from django_mcp.transport.views import build_api
    from tests.wire import headers_for

    client = TestAsyncClient(build_api(McpServer(urls_namespace="auth_from_settings")))
    body = request_body("server/discover")
    headers = headers_for(body)
    meta = {"SERVER_NAME": "testserver", "SERVER_PORT": "80", "REMOTE_ADDR": "127.0.0.1"}
    refused = await client.post("", json=body, headers=headers, META=dict(meta))
    assert refused.status_code == 401
    authorized = {**headers, "Authorization": "Bearer bob-token"}
    allowed = await client.post("", json=body, headers=authorized, META=dict(meta))
    assert allowed.status_code == 200
