"""Prompts, resources, resource templates and completion (on a server with its own registries)."""

import base64
import json

import pytest

from tests.wire import assert_wire, call, post, request_body

PATH = "/mcp-content/"


async def rpc(client, method, params=None, **kw):
    return await call(client, method, params, path=PATH, **kw)


async def test_capabilities_list_exactly_what_is_registered(async_client):
    caps = (await rpc(async_client, "server/discover"))["result"]["capabilities"]
    assert caps == {
        "tools": {"listChanged": True},
        "prompts": {"listChanged": True},
        "resources": {"subscribe": True, "listChanged": True},
        "completions": {},
        "logging": {},
    }


async def test_methods_of_unregistered_kinds_are_32601(async_client):
    # The test toolapp registers tools only, so the default server serves no prompts or resources.
    for method in ("prompts/list", "prompts/get", "resources/list", "resources/read", "completion/complete"):
        response = await post(async_client, request_body(method, {"name": "x", "uri": "test://x"}))
        assert response.status_code == 404, method
        assert json.loads(response.content)["error"]["code"] == -32601


async def test_prompts_list(async_client):
    r = await rpc(async_client, "prompts/list")
    assert_wire(r, "ListPromptsResultResponse")
    result = r["result"]
    assert [p["name"] for p in result["prompts"]] == ["hello", "paint", "broken_prompt"]
    assert result["prompts"][1] == {
        "name": "paint",
        "title": "Paint",
        "arguments": [
            {"name": "colour", "description": "A colour", "required": True},
            {"name": "shade", "required": False},
        ],
    }
    assert (result["ttlMs"], result["cacheScope"]) == (0, "private")


async def test_prompt_arguments_are_derived_from_the_signature(async_client):
    from tests.servers import content_prompts

    assert content_prompts.get("hello").to_wire() == {"name": "hello", "description": "Says hello."}


async def test_prompts_get_with_arguments_and_content_types(async_client):
    r = await rpc(async_client, "prompts/get", {"name": "paint", "arguments": {"colour": "red"}})
    assert_wire(r, "GetPromptResultResponse")
    messages = r["result"]["messages"]
    assert messages[0] == {"role": "user", "content": {"type": "text", "text": "Paint it red (plain)."}}
    assert messages[1]["role"] == "assistant"
    assert messages[2]["content"]["type"] == "resource"


@pytest.mark.parametrize(
    "params,fragment",
    [
        ({"name": "nope"}, "Unknown prompt"),
        ({"name": "paint"}, "Missing required argument(s) for prompt 'paint': colour"),
        ({"name": "paint", "arguments": {"colour": 3}}, "must be strings"),
        ({"name": "paint", "arguments": ["red"]}, "must be an object"),
    ],
)
async def test_prompts_get_errors_are_32602(async_client, params, fragment):
    response = await post(async_client, request_body("prompts/get", params), path=PATH)
    assert response.status_code == 400
    error = json.loads(response.content)["error"]
    assert error["code"] == -32602
    assert fragment in error["message"]


async def test_a_failing_prompt_is_32603_with_the_cause(async_client):
    response = await post(async_client, request_body("prompts/get", {"name": "broken_prompt"}), path=PATH)
    error = json.loads(response.content)["error"]
    assert error["code"] == -32603
    assert "RuntimeError: prompt exploded" in error["message"]


async def test_resources_list_and_templates_list(async_client):
    r = await rpc(async_client, "resources/list")
    assert_wire(r, "ListResourcesResultResponse")
    assert r["result"]["resources"] == [
        {"uri": "test://readme", "name": "readme", "description": "The readme.", "mimeType": "text/plain"},
        {"uri": "test://logo", "name": "logo", "mimeType": "image/png"},
        {"uri": "test://broken", "name": "broken_resource"},
    ]
    t = await rpc(async_client, "resources/templates/list")
    assert_wire(t, "ListResourceTemplatesResultResponse")
    assert t["result"]["resourceTemplates"] == [
        {"uriTemplate": "test://users/{user_id}/profile", "name": "profile", "mimeType": "application/json"}
    ]
    assert "cacheScope" in t["result"] and "ttlMs" in t["result"]


async def test_read_text_binary_and_templated_resources(async_client):
    text = await rpc(async_client, "resources/read", {"uri": "test://readme"})
    assert_wire(text, "ReadResourceResultResponse")
    assert text["result"]["contents"] == [{"uri": "test://readme", "text": "Read me.", "mimeType": "text/plain"}]
    assert (text["result"]["ttlMs"], text["result"]["cacheScope"]) == (0, "private")
    blob = (await rpc(async_client, "resources/read", {"uri": "test://logo"}))["result"]["contents"][0]
    assert base64.b64decode(blob["blob"]) == b"\x89PNG\r\n"
    assert blob["mimeType"] == "image/png"
    templated = (await rpc(async_client, "resources/read", {"uri": "test://users/a%20b/profile"}))["result"]
    assert templated["contents"] == [
        {"uri": "test://users/a%20b/profile", "text": '{"id": "a b"}', "mimeType": "application/json"}
    ]


@pytest.mark.parametrize("uri", ["test://nope", "test://users//profile", "test://users/1/2/profile"])
async def test_unknown_resource_is_32602_with_the_uri(async_client, uri):
    response = await post(async_client, request_body("resources/read", {"uri": uri}), path=PATH)
    assert response.status_code == 400
    body = json.loads(response.content)
    assert "result" not in body
    assert body["error"]["code"] == -32602
    assert body["error"]["data"] == {"uri": uri}


async def test_resources_read_needs_a_uri_and_mcp_name_mirrors_it(async_client):
    response = await post(async_client, request_body("resources/read", {}), path=PATH)
    assert json.loads(response.content)["error"]["code"] == -32602
    body = request_body("resources/read", {"uri": "test://readme"})
    response = await post(async_client, body, path=PATH, headers={"Mcp-Name": "test://logo"})
    assert json.loads(response.content)["error"]["code"] == -32020


async def test_a_failing_resource_is_32603(async_client):
    response = await post(async_client, request_body("resources/read", {"uri": "test://broken"}), path=PATH)
    error = json.loads(response.content)["error"]
    assert error["code"] == -32603 and "disk on fire" in error["message"]


async def test_complete_prompt_argument(async_client):
    params = {"ref": {"type": "ref/prompt", "name": "paint"}, "argument": {"name": "colour", "value": "r"}}
    r = await rpc(async_client, "completion/complete", params)
    assert_wire(r, "CompleteResultResponse")
    assert r["result"]["completion"] == {"values": ["red", "rose"], "total": 2, "hasMore": False}


async def test_complete_caps_at_100_values(async_client):
    params = {"ref": {"type": "ref/prompt", "name": "paint"}, "argument": {"name": "shade", "value": "s"}}
    completion = (await rpc(async_client, "completion/complete", params))["result"]["completion"]
    assert len(completion["values"]) == 100
    assert completion["values"][0] == "s0"
    assert (completion["total"], completion["hasMore"]) == (150, True)


async def test_complete_template_variable_and_argument_without_completer(async_client):
    ref = {"type": "ref/resource", "uri": "test://users/{user_id}/profile"}
    r = await rpc(async_client, "completion/complete", {"ref": ref, "argument": {"name": "user_id", "value": "1"}})
    assert r["result"]["completion"]["values"] == ["1", "12", "123"]
    ref = {"type": "ref/prompt", "name": "hello"}
    r = await rpc(async_client, "completion/complete", {"ref": ref, "argument": {"name": "x", "value": ""}})
    assert r["result"]["completion"] == {"values": [], "total": 0, "hasMore": False}


@pytest.mark.parametrize(
    "params",
    [
        {"ref": {"type": "ref/prompt", "name": "nope"}, "argument": {"name": "a", "value": ""}},
        {"ref": {"type": "ref/resource", "uri": "test://readme"}, "argument": {"name": "a", "value": ""}},
        {"ref": {"type": "ref/other"}, "argument": {"name": "a", "value": ""}},
        {"ref": {"type": "ref/prompt", "name": "paint"}},
    ],
)
async def test_complete_errors_are_32602(async_client, params):
    response = await post(async_client, request_body("completion/complete", params), path=PATH)
    assert response.status_code == 400
    assert json.loads(response.content)["error"]["code"] == -32602


def test_registration_errors_are_improperly_configured():
    from django.core.exceptions import ImproperlyConfigured

    from django_mcp import PromptRegistry, ResourceRegistry

    prompts, resources = PromptRegistry(), ResourceRegistry()
    with pytest.raises(ImproperlyConfigured, match="Invalid prompt name"):
        prompts.register(lambda request: "x", name="bad name")
    with pytest.raises(ImproperlyConfigured, match="unknown arguments"):
        prompts.register(lambda request, a: "x", name="p", complete={"b": lambda *a: []})
    with pytest.raises(ImproperlyConfigured, match="Invalid resource URI"):
        resources.register("bad uri", lambda request: "x")
    with pytest.raises(ImproperlyConfigured, match="need a URI template"):
        resources.register("test://a", lambda request: "x", complete={"a": lambda *a: []})
    with pytest.raises(ImproperlyConfigured, match="unknown variables"):
        resources.register("test://{a}", lambda request, a: "x", complete={"b": lambda *a: []})
    resources.register("test://dup", lambda request: "x")
    with pytest.raises(ImproperlyConfigured, match="already registered"):
        resources.register("test://dup", lambda request: "y")
