"""server/discover, result envelopes and per-request options."""

from django.test import override_settings

from tests.wire import assert_wire, call

SERVER_INFO = "io.modelcontextprotocol/serverInfo"


async def test_discover_lists_versions_capabilities_and_caching(async_client):
    r = await call(async_client, "server/discover", id="d1")
    assert_wire(r, "DiscoverResultResponse")
    result = r["result"]
    assert r["id"] == "d1"
    assert result["resultType"] == "complete"
    assert result["supportedVersions"] == ["2026-07-28"]
    # Exactly what is registered: the test settings install tools only (no prompts or resources),
    # and an in-memory channel layer carries list changes.
    assert result["capabilities"] == {"tools": {"listChanged": True}, "logging": {}}
    assert result["ttlMs"] == 0
    assert result["cacheScope"] == "private"
    assert "instructions" not in result
    assert result["_meta"][SERVER_INFO] == {"name": "django-mcp-tests", "version": "9.9.9"}


@override_settings(
    DJANGO_MCP={
        "SERVER_NAME": "renamed",
        "SERVER_VERSION": "2.0",
        "SERVER_TITLE": "Renamed",
        "INSTRUCTIONS": "Use add.",
        "CACHE_TTL_SECONDS": 5,
        "CACHE_SCOPE": "public",
    }
)
async def test_discover_follows_settings_changes(async_client):
    result = (await call(async_client, "server/discover"))["result"]
    assert result["_meta"][SERVER_INFO] == {"name": "renamed", "version": "2.0", "title": "Renamed"}
    assert result["instructions"] == "Use add."
    assert (result["ttlMs"], result["cacheScope"]) == (5000, "public")


@override_settings(DJANGO_MCP={"SERVER_INFO_IN_META": False})
async def test_server_info_can_be_switched_off(async_client):
    for method in ("server/discover", "tools/list"):
        result = (await call(async_client, method))["result"]
        assert SERVER_INFO not in result.get("_meta", {})
        assert result["resultType"] == "complete"


async def test_every_result_carries_result_type_and_server_info(async_client):
    for method, params in [
        ("server/discover", {}),
        ("tools/list", {}),
        ("tools/call", {"name": "add", "arguments": {"a": 1}}),
        ("tools/call", {"name": "boom"}),
    ]:
        result = (await call(async_client, method, params))["result"]
        assert result["resultType"] == "complete", method
        assert result["_meta"][SERVER_INFO]["name"] == "django-mcp-tests", method


async def test_static_server_options_override_settings(async_client):
    result = (await call(async_client, "server/discover", path="/mcp-ext/"))["result"]
    assert result["_meta"][SERVER_INFO] == {"name": "ext-server", "version": "9.9.9"}
    assert (result["ttlMs"], result["cacheScope"]) == (60_000, "public")


async def test_per_request_options_are_computed_for_each_request(async_client):
    a = (await call(async_client, "server/discover", path="/mcp-dynamic/", headers={"X-Tenant": "acme"}))["result"]
    b = (await call(async_client, "server/discover", path="/mcp-dynamic/", headers={"X-Tenant": "globex"}))["result"]
    assert a["instructions"] == "Hello acme"
    assert b["instructions"] == "Hello globex"
    # Options that vary per request are never offered to shared caches.
    assert a["cacheScope"] == "private"
    assert SERVER_INFO not in a.get("_meta", {})
