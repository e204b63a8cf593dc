"""The extension plugin interface, exercised by a small test extension (tests/servers.py)."""

import json

import pytest

from django_mcp import ExtensionMethod, ExtensionPlugin, McpServer
from tests.wire import call, post, request_body

EXT = "com.example/echo"
DECLARED = {"capabilities": {"extensions": {EXT: {}}}}


async def test_plugin_is_advertised_with_its_settings(async_client):
    caps = (await call(async_client, "server/discover", path="/mcp-ext/"))["result"]["capabilities"]
    assert caps["extensions"] == {EXT: {"maxLength": 100}}


async def test_plugin_method_is_served_to_a_declaring_request(async_client):
    r = await call(
        async_client,
        "echo/say",
        {"text": "hi"},
        path="/mcp-ext/",
        meta_extra=DECLARED,
        headers={"Mcp-Name": "hi"},
    )
    assert r["result"]["echoed"] == "hi"
    assert r["result"]["resultType"] == "complete"


async def test_plugin_method_name_param_is_routed_by_mcp_name(async_client):
    body = request_body("echo/say", {"text": "hi"}, **DECLARED)
    response = await post(async_client, body, path="/mcp-ext/", headers={"Mcp-Name": "other"})
    assert response.status_code == 400
    assert json.loads(response.content)["error"]["code"] == -32020


async def test_non_declaring_request_gets_32021_before_the_handler(async_client):
    body = request_body("echo/say", {"text": "hi"})
    response = await post(async_client, body, path="/mcp-ext/", headers={"Mcp-Name": "hi"})
    assert response.status_code == 400
    error = json.loads(response.content)["error"]
    assert error["code"] == -32021
    assert error["data"] == {"requiredCapabilities": {"extensions": {EXT: {}}}}


async def test_method_without_declaration_requirement(async_client):
    r = await call(async_client, "echo/open", {"text": "x"}, path="/mcp-ext/")
    assert r["result"]["echoed"] == "x"


async def test_disabled_plugin_methods_are_32601(async_client):
    body = request_body("echo/open", {"text": "x"}, **DECLARED)
    response = await post(async_client, body, path="/mcp-ext/", headers={"X-Beta": "off"})
    assert response.status_code == 404
    assert json.loads(response.content)["error"]["code"] == -32601


async def test_static_options_advertise_once_whatever_the_predicate(async_client):
    caps = (await call(async_client, "server/discover", path="/mcp-ext/", headers={"X-Beta": "off"}))["result"]
    assert EXT in caps["capabilities"]["extensions"]


async def test_per_request_options_make_discovery_follow_the_predicate(async_client):
    on = (await call(async_client, "server/discover", path="/mcp-dynamic/"))["result"]["capabilities"]
    off = (await call(async_client, "server/discover", path="/mcp-dynamic/", headers={"X-Beta": "off"}))["result"]
    assert EXT in on["extensions"]
    assert "extensions" not in off["capabilities"]


async def test_plugin_methods_are_not_on_servers_without_the_plugin(async_client):
    body = request_body("echo/open", {"text": "x"})
    response = await post(async_client, body)
    assert response.status_code == 404


def test_plugins_need_unique_identifiers_and_methods():
    class Nameless(ExtensionPlugin):
        pass

    class Clash(ExtensionPlugin):
        identifier = "com.example/clash"

        def methods(self):
            async def handler(request, params):
                return {}

            return {"tools/list": ExtensionMethod(handler)}

    with pytest.raises(ValueError, match="identifier"):
        McpServer(extension_plugins=[Nameless()])
    with pytest.raises(ValueError, match="tools/list"):
        McpServer(extension_plugins=[Clash()])


async def test_extension_tool_option_decorates_the_tool_list(async_client):
    tools = (await call(async_client, "tools/list", path="/mcp-ext/"))["result"]["tools"]
    assert tools[0]["_meta"] == {"com.example/echo/shout": True}
    off = (await call(async_client, "tools/list", path="/mcp-ext/", headers={"X-Beta": "off"}))["result"]["tools"]
    assert "_meta" not in off[0]  # a plugin disabled for the request adds nothing


async def test_extension_wraps_tools_call(async_client):
    result = (
        await call(
            async_client,
            "tools/call",
            {"name": "greet", "arguments": {"name": "ada"}},
            path="/mcp-ext/",
            headers={"Mcp-Name": "greet"},
        )
    )["result"]
    assert result["content"] == [{"type": "text", "text": "HELLO ADA"}]
    plain = (
        await call(
            async_client,
            "tools/call",
            {"name": "greet", "arguments": {"name": "ada"}},
            path="/mcp-ext/",
            headers={"Mcp-Name": "greet", "X-Beta": "off"},
        )
    )["result"]
    assert plain["content"] == [{"type": "text", "text": "hello ada"}]


async def test_extension_method_params_are_validated_before_the_handler(async_client):
    body = request_body("echo/open", {"text": 5})
    response = await post(async_client, body, path="/mcp-ext/")
    assert response.status_code == 400
    error = json.loads(response.content)["error"]
    assert error["code"] == -32602 and "text" in error["message"]


def test_a_plugin_serves_one_server():
    from tests.servers import EchoExtension

    plugin = EchoExtension()
    McpServer(extension_plugins=[plugin], urls_namespace="one")
    with pytest.raises(ValueError, match="already installed"):
        McpServer(extension_plugins=[plugin], urls_namespace="two")
