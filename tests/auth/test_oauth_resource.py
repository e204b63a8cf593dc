"""The endpoint as an OAuth resource server: metadata, challenges, audience, scopes, identity (in process)."""

from __future__ import annotations

import asyncio
import json
import re
from datetime import timedelta

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import Permission, User
from django.test import override_settings
from django.utils import timezone
from oauth2_provider.models import AccessToken, Application

from django_mcp.models import PersonalToken, Task
from django_mcp.tasks import EXTENSION_ID
from tests.wire import assert_wire, post, request_body

pytestmark = pytest.mark.django_db(transaction=True)

RESOURCE = "http://testserver/mcp-oauth"
TASKS = {"extensions": {EXTENSION_ID: {}}}
PATH = "/mcp-oauth"


def _token(user, *, scope="mcp", resource=(RESOURCE,), expires_in=3600, raw="tok-" + "a" * 30, application=None):
    return AccessToken.objects.create(
        user=user,
        token=raw,
        scope=scope,
        resource=list(resource),
        application=application,
        expires=timezone.now() + timedelta(seconds=expires_in),
    )


@pytest.fixture
def alice():
    return User.objects.create_user("alice", password="pw")


async def _post(async_client, method="tools/list", params=None, token=None, **kwargs):
    headers = kwargs.pop("headers", {})
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    return await post(async_client, request_body(method, params), path=PATH, headers=headers, **kwargs)


def _challenge(response) -> dict[str, str]:
    scheme, _, rest = response["WWW-Authenticate"].partition(" ")
    assert scheme == "Bearer"
    return {key: json.loads(f'"{value}"') for key, value in re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', rest)}


async def test_protected_resource_metadata_names_the_endpoint_its_issuer_and_scopes(async_client):
    response = await async_client.get("/.well-known/oauth-protected-resource/mcp-oauth")
    assert response.status_code == 200 and response["Access-Control-Allow-Origin"] == "*"
    document = json.loads(response.content)
    assert document["resource"] == RESOURCE
    assert document["authorization_servers"] == ["http://testserver"]
    assert document["scopes_supported"] == ["mcp", "notes:write"]  # the endpoint's, then its tools'
    assert document["bearer_methods_supported"] == ["header"]
    root = json.loads((await async_client.get("/.well-known/oauth-protected-resource")).content)
    assert root["resource"] == "http://testserver" and "offline_access" not in root["scopes_supported"]


async def test_metadata_for_a_path_that_is_no_endpoint_is_404(async_client):
    response = await async_client.get("/.well-known/oauth-protected-resource/admin")
    assert response.status_code == 404


async def test_no_token_is_401_with_the_metadata_and_scope_in_the_challenge(async_client):
    response = await _post(async_client)
    assert response.status_code == 401
    body = json.loads(response.content)
    assert_wire(body, "JSONRPCErrorResponse")
    assert _challenge(response) == {
        "scope": "mcp",
        "resource_metadata": "http://testserver/.well-known/oauth-protected-resource/mcp-oauth",
    }


async def test_a_good_token_acts_as_its_user(async_client, alice):
    await sync_to_async(_token)(alice)
    response = await _post(async_client, "tools/call", {"name": "whoami"}, token="tok-" + "a" * 30)
    assert response.status_code == 200, response.content
    assert json.loads(response.content)["result"]["content"][0]["text"] == "alice"


@pytest.mark.parametrize(
    ("case", "fields"),
    [
        ("another resource", {"resource": ("http://testserver/mcp-other",)}),
        ("a prefix that is not a path segment", {"resource": ("http://testserver/mcp",)}),
        ("no resource at all", {"resource": ()}),
        ("expired", {"expires_in": -5}),
    ],
)
async def test_tokens_that_are_not_for_this_endpoint_now_are_401(async_client, alice, case, fields):
    await sync_to_async(_token)(alice, **fields)
    response = await _post(async_client, token="tok-" + "a" * 30)
    assert response.status_code == 401, case
    assert _challenge(response)["error"] == "invalid_token"
    assert_wire(json.loads(response.content), "JSONRPCErrorResponse")


async def test_a_revoked_token_is_401(async_client, alice):
    token = await sync_to_async(_token)(alice)
    await sync_to_async(token.revoke)()
    assert (await _post(async_client, token="tok-" + "a" * 30)).status_code == 401


async def test_a_token_for_nobody_is_401(async_client):
    # E.g. client_credentials, or a DCR registration token: it acts for no user.
    await sync_to_async(_token)(None)
    response = await _post(async_client, token="tok-" + "a" * 30)
    assert response.status_code == 401
    assert "no active user" in _challenge(response)["error_description"]


async def test_a_token_of_an_inactive_user_is_401(async_client, alice):
    alice.is_active = False
    await sync_to_async(alice.save)()
    await sync_to_async(_token)(alice)
    assert (await _post(async_client, token="tok-" + "a" * 30)).status_code == 401


async def test_a_token_without_the_endpoint_scope_is_403_naming_it(async_client, alice):
    await sync_to_async(_token)(alice, scope="notes:write")
    response = await _post(async_client, token="tok-" + "a" * 30)
    assert response.status_code == 403
    challenge = _challenge(response)
    assert challenge["error"] == "insufficient_scope" and challenge["scope"] == "mcp"


@pytest.mark.parametrize(
    "header",
    ["Bearer", "Bearer ", "Basic YWxpY2U6cHc=", "Bearer a b", "Bearer " + "x" * 5000, "bearer\ttok", "Token tok"],
)
async def test_malformed_authorization_headers_are_401_with_a_json_rpc_body(async_client, header):
    response = await _post(async_client, headers={"Authorization": header})
    assert response.status_code == 401, header
    assert_wire(json.loads(response.content), "JSONRPCErrorResponse")
    assert "resource_metadata" in _challenge(response)


async def test_a_token_in_the_query_string_is_refused(async_client, alice):
    await sync_to_async(_token)(alice)
    body = request_body("tools/list")
    response = await post(async_client, body, path=PATH + "?access_token=tok-" + "a" * 30)
    assert response.status_code == 401
    assert "query string" in _challenge(response)["error_description"]


async def test_a_tool_scope_the_token_lacks_is_403_naming_every_scope_then_works_after_step_up(async_client, alice):
    await sync_to_async(_token)(alice)
    params = {"name": "write_note", "arguments": {"text": "hi"}}
    response = await _post(async_client, "tools/call", params, token="tok-" + "a" * 30)
    assert response.status_code == 403
    body = json.loads(response.content)
    assert_wire(body, "JSONRPCErrorResponse")
    assert body["id"] == 1 and body["error"]["data"] == {"requiredScopes": ["mcp", "notes:write"]}
    assert _challenge(response)["scope"] == "mcp notes:write"
    await sync_to_async(_token)(alice, scope="mcp notes:write", raw="tok-" + "b" * 30)
    stepped_up = await _post(async_client, "tools/call", params, token="tok-" + "b" * 30)
    assert json.loads(stepped_up.content)["result"]["content"][0]["text"] == "alice wrote hi"


async def test_the_verified_token_keeps_nothing_of_its_request_and_still_challenges(alice):
    # request.auth lives as long as a task's body that keeps it: not the request that brought the token.
    import gc

    from django.http import HttpRequest
    from django.test import RequestFactory

    from tests.oauth import oauth_server

    await sync_to_async(_token)(alice)
    request = RequestFactory().post(PATH, HTTP_AUTHORIZATION="Bearer tok-" + "a" * 30, HTTP_HOST="testserver")
    verified = await oauth_server.auth(request)
    assert verified is not None and verified.user.username == "alice"
    held = gc.get_referents(verified.challenge)  # a partial: its function, its arguments
    assert not any(isinstance(one, HttpRequest) for one in [*held, *gc.get_referents(*held)])
    refusal = verified.insufficient_scope(["notes:write"])
    assert refusal.http_status == 403 and refusal.data == {"requiredScopes": ["mcp", "notes:write"]}
    assert "/.well-known/oauth-protected-resource/mcp-oauth" in refusal.headers["WWW-Authenticate"]


async def test_scoped_tools_are_listed_and_permission_tools_only_to_those_who_hold_it(async_client, alice):
    await sync_to_async(_token)(alice)
    names = lambda response: [t["name"] for t in json.loads(response.content)["result"]["tools"]]  # noqa: E731
    listed = await _post(async_client, token="tok-" + "a" * 30)
    assert names(listed) == ["whoami", "write_note", "slow_report"]  # write_note: a step-up away
    assert json.loads(listed.content)["result"]["cacheScope"] == "private"
    refused = await _post(async_client, "tools/call", {"name": "count_users"}, token="tok-" + "a" * 30)
    unknown = await _post(async_client, "tools/call", {"name": "no_such_tool"}, token="tok-" + "a" * 30)
    assert json.loads(refused.content)["error"]["message"] == "Unknown tool: count_users"
    assert json.loads(unknown.content)["error"]["code"] == json.loads(refused.content)["error"]["code"]
    await sync_to_async(alice.user_permissions.add)(await Permission.objects.aget(codename="view_user"))
    alice = await User.objects.aget(pk=alice.pk)  # a fresh user: permissions are cached per instance
    listed = await _post(async_client, token="tok-" + "a" * 30)
    assert names(listed) == ["whoami", "write_note", "count_users"]  # the first page (PAGE_SIZE 3)
    allowed = await _post(async_client, "tools/call", {"name": "count_users"}, token="tok-" + "a" * 30)
    assert json.loads(allowed.content)["result"]["content"][0]["text"] == "1"


async def test_a_task_binds_to_the_token_user_and_every_task_request_is_authenticated(async_client, alice):
    await sync_to_async(_token)(alice)
    bob = await sync_to_async(User.objects.create_user)("bob")
    await sync_to_async(_token)(bob, raw="tok-" + "c" * 30)

    async def rpc(method, params, token):
        body = request_body(method, params, capabilities=TASKS)
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return await post(async_client, body, path=PATH, headers=headers)

    created = await rpc("tools/call", {"name": "slow_report", "arguments": {"n": 2}}, "tok-" + "a" * 30)
    task_id = json.loads(created.content)["result"]["taskId"]
    row = await Task.objects.select_related("user").aget(pk=task_id)
    assert row.user == alice and row.owner_kind == "user"
    assert (await rpc("tasks/get", {"taskId": task_id}, None)).status_code == 401
    refused = json.loads((await rpc("tasks/get", {"taskId": task_id}, "tok-" + "c" * 30)).content)
    assert refused["error"]["code"] == -32602  # bob sees no such task
    for _ in range(200):
        result = json.loads((await rpc("tasks/get", {"taskId": task_id}, "tok-" + "a" * 30)).content)["result"]
        if result["status"] == "completed":
            break
        await asyncio.sleep(0.02)
    assert result["result"]["content"][0]["text"] == "report 2 for alice"


async def test_a_personal_token_works_until_revoked_or_expired(async_client, alice):
    row, token = await sync_to_async(PersonalToken.issue)(alice, "ci job")
    assert token.startswith("mcp_pat_") and token not in (row.digest, row.prefix)
    response = await _post(async_client, "tools/call", {"name": "whoami"}, token=token)
    assert json.loads(response.content)["result"]["content"][0]["text"] == "alice"
    await sync_to_async(row.revoke)()
    assert (await _post(async_client, token=token)).status_code == 401
    _, other = await sync_to_async(PersonalToken.issue)(alice, "old", lifetime=timedelta(seconds=-1))
    assert (await _post(async_client, token=other)).status_code == 401


async def test_a_personal_token_without_the_endpoint_scope_is_403(async_client, alice):
    _, token = await sync_to_async(PersonalToken.issue)(alice, "narrow", scope="notes:write")
    assert (await _post(async_client, token=token)).status_code == 403


@override_settings(DJANGO_MCP={"OAUTH_RESOURCE_URL": "https://mcp.example.com/mcp-oauth"})
async def test_a_configured_canonical_url_is_the_audience_and_the_metadata(async_client, alice):
    await sync_to_async(_token)(alice)  # issued for http://testserver/mcp-oauth
    assert (await _post(async_client, token="tok-" + "a" * 30)).status_code == 401
    await sync_to_async(_token)(alice, raw="tok-" + "d" * 30, resource=("https://mcp.example.com/mcp-oauth",))
    assert (await _post(async_client, token="tok-" + "d" * 30)).status_code == 200
    response = await _post(async_client)
    assert _challenge(response)["resource_metadata"] == (
        "https://mcp.example.com/.well-known/oauth-protected-resource/mcp-oauth"
    )


async def test_the_token_is_never_stored_in_a_task_row(async_client, alice):
    application = await sync_to_async(Application.objects.create)(
        name="c", client_type="public", authorization_grant_type="authorization-code", user=alice
    )
    await sync_to_async(_token)(alice, application=application)
    body = request_body("tools/call", {"name": "slow_report"}, capabilities=TASKS)
    await post(async_client, body, path=PATH, headers={"Authorization": "Bearer tok-" + "a" * 30})
    rows = [row async for row in Task.objects.values()]
    assert rows and not any("tok-" in json.dumps(row, default=str) for row in rows)


async def test_a_known_token_is_verified_once_until_it_is_revoked_or_its_user_changes(async_client, alice):
    from unittest import mock

    from django_mcp.auth import PersonalTokenVerifier

    row, token = await sync_to_async(PersonalToken.issue)(alice, "cached")
    real = PersonalTokenVerifier.verify
    with mock.patch.object(PersonalTokenVerifier, "verify", autospec=True, side_effect=real) as verify:
        assert (await _post(async_client, token=token)).status_code == 200
        assert (await _post(async_client, token=token)).status_code == 200
        assert verify.call_count == 1  # the second request: no lookup
        alice.first_name = "Alice"  # saving the user (permissions, is_active) forgets every verified token
        await sync_to_async(alice.save)()
        assert (await _post(async_client, token=token)).status_code == 200
        assert verify.call_count == 2
        await sync_to_async(row.revoke)()
        assert (await _post(async_client, token=token)).status_code == 401


@override_settings(DJANGO_MCP={"OAUTH_TOKEN_CACHE_SECONDS": 0})
async def test_with_no_cache_every_request_verifies(async_client, alice):
    from unittest import mock

    from django_mcp.auth import PersonalTokenVerifier

    _, token = await sync_to_async(PersonalToken.issue)(alice, "uncached")
    real = PersonalTokenVerifier.verify
    with mock.patch.object(PersonalTokenVerifier, "verify", autospec=True, side_effect=real) as verify:
        for _ in range(3):
            assert (await _post(async_client, token=token)).status_code == 200
    assert verify.call_count == 3


async def test_a_remembered_user_is_a_copy_of_its_own_per_request(async_client, alice):
    _, token = await sync_to_async(PersonalToken.issue)(alice, "copies")
    seen = []
    from tests.oauth import oauth_tools

    @oauth_tools.register(name="touch_user")
    def touch_user(request):
        seen.append((request.user, request.user.first_name))
        request.user.first_name = "changed by a tool"
        return "ok"

    try:
        for _ in range(2):
            await _post(async_client, "tools/call", {"name": "touch_user"}, token=token)
    finally:
        oauth_tools.unregister("touch_user")
    (first, _), (second, name_seen) = seen
    assert first is not second and name_seen == ""


async def test_prompts_and_resources_with_permissions_follow_the_same_rule(async_client, alice):
    await sync_to_async(_token)(alice)
    token = "tok-" + "a" * 30

    async def rpc(method, params=None):
        return json.loads((await _post(async_client, method, params, token=token)).content)

    async def hidden_everywhere():
        assert [p["name"] for p in (await rpc("prompts/list"))["result"]["prompts"]] == ["greeting"]
        assert (await rpc("resources/list"))["result"]["resources"] == []
        assert (await rpc("resources/templates/list"))["result"]["resourceTemplates"] == []
        unknown = await rpc("prompts/get", {"name": "user_report", "arguments": {"who": "x"}})
        assert unknown["error"]["message"] == "Unknown prompt: user_report"
        missing = await rpc("resources/read", {"uri": "users://count"})
        assert missing["error"]["message"] == "Resource not found: users://count"
        missing = await rpc("resources/read", {"uri": "users://bob"})
        assert missing["error"]["message"] == "Resource not found: users://bob"
        ref = {"ref": {"type": "ref/prompt", "name": "user_report"}, "argument": {"name": "who", "value": "a"}}
        assert (await rpc("completion/complete", ref))["error"]["code"] == -32602

    await hidden_everywhere()
    await sync_to_async(alice.user_permissions.add)(await Permission.objects.aget(codename="view_user"))
    listed = await rpc("prompts/list")
    assert [p["name"] for p in listed["result"]["prompts"]] == ["user_report", "greeting"]
    assert listed["result"]["cacheScope"] == "private"
    assert (await rpc("prompts/get", {"name": "user_report", "arguments": {"who": "x"}}))["result"]["messages"]
    assert (await rpc("resources/read", {"uri": "users://count"}))["result"]["contents"][0]["text"] == "1"
    assert (await rpc("resources/read", {"uri": "users://bob"}))["result"]["contents"][0]["text"] == "bob"
    ref = {"ref": {"type": "ref/prompt", "name": "user_report"}, "argument": {"name": "who", "value": "a"}}
    assert (await rpc("completion/complete", ref))["result"]["completion"]["values"] == ["alice"]


def test_bad_permissions_and_scopes_are_definition_errors():
    from django_mcp import DefinitionError, PromptRegistry, ResourceRegistry, ToolRegistry

    with pytest.raises(DefinitionError, match="not permissions of the form"):
        ToolRegistry().register(lambda request: 1, name="t", permissions=["view_user"])
    with pytest.raises(DefinitionError, match="not OAuth scope tokens"):
        ToolRegistry().register(lambda request: 1, name="t", scopes=["has space"])
    with pytest.raises(DefinitionError, match="a list of strings, not one string"):
        ToolRegistry().register(lambda request: 1, name="t", scopes="mcp")
    with pytest.raises(DefinitionError, match="Prompt 'p'"):
        PromptRegistry().register(lambda request: "x", name="p", permissions=["nope"])
    with pytest.raises(DefinitionError, match="Resource 'r://x'"):
        ResourceRegistry().register("r://x", lambda request: "x", permissions=["nope"])


class _Introspection:
    """A remote authorization server's RFC 7662 endpoint, as django-oauth-toolkit's requests.post sees it."""

    def __init__(self, answers):
        self.answers, self.calls = answers, []

    def post(self, url, data=None, headers=None):
        from unittest import mock

        self.calls.append((url, data, headers))
        answer = self.answers.get(data["token"], {"active": False})
        return mock.Mock(status_code=200, reason="OK", json=lambda: answer)


@pytest.mark.parametrize(
    ("answer", "status"),
    [
        ({"active": True, "username": "alice", "scope": "mcp", "aud": RESOURCE}, 200),
        ({"active": True, "username": "alice", "scope": "mcp", "aud": "https://other.example/mcp"}, 401),
        ({"active": True, "username": "alice", "scope": "openid", "aud": RESOURCE}, 403),
        ({"active": True, "scope": "mcp", "aud": RESOURCE}, 401),  # no username: acts for nobody
        ({"active": False}, 401),
    ],
)
async def test_a_remote_authorization_servers_token_by_introspection(async_client, alice, settings, answer, status):
    from unittest import mock

    settings.OAUTH2_PROVIDER = {
        **settings.OAUTH2_PROVIDER,
        "RESOURCE_SERVER_INTROSPECTION_URL": "https://as.example.com/introspect/",
        "RESOURCE_SERVER_INTROSPECTION_CREDENTIALS": ("rs-client", "rs-secret"),
        "RESOURCE_SERVER_TOKEN_CACHING_SECONDS": 60,
    }
    remote = _Introspection({"remote-token-1": {**answer, "exp": int(timezone.now().timestamp()) + 600}})
    with mock.patch("oauth2_provider.oauth2_validators.requests.post", remote.post):
        response = await _post(async_client, "tools/call", {"name": "whoami"}, token="remote-token-1")
        assert response.status_code == status, response.content
        if status == 200:
            assert json.loads(response.content)["result"]["content"][0]["text"] == "alice"
            await _post(async_client, "tools/call", {"name": "whoami"}, token="remote-token-1")
            assert len(remote.calls) == 1  # then known: cached (here, and in django-oauth-toolkit's table)
    assert remote.calls[0][0] == "https://as.example.com/introspect/" and "Basic" in remote.calls[0][2]["Authorization"]


async def test_the_handshake_era_signs_in_and_steps_up_the_same_way(async_client, alice):
    from tests.wire import initialize_body

    await sync_to_async(_token)(alice)
    auth = {"Authorization": "Bearer tok-" + "a" * 30}
    hdrs = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}

    async def send(body, session=None, token=True):
        headers = {**hdrs, **(auth if token else {})}
        if session:
            headers.update({"Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-11-25"})
        return await async_client.post(
            PATH, data=json.dumps(body), content_type=headers.pop("Content-Type"), headers=headers
        )

    assert (await send(initialize_body("2025-11-25", {}, "legacy"), token=False)).status_code == 401
    opened = await send(initialize_body("2025-11-25", {}, "legacy"))
    session = opened["Mcp-Session-Id"]
    await send({"jsonrpc": "2.0", "method": "notifications/initialized"}, session)
    call = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "whoami"}}
    assert json.loads((await send(call, session)).content)["result"]["content"][0]["text"] == "alice"
    assert (await send(call, session, token=False)).status_code == 401  # every request brings its token
    note = {**call, "params": {"name": "write_note", "arguments": {"text": "x"}}}
    refused = await send(note, session)
    assert refused.status_code == 403 and 'scope="mcp notes:write"' in refused["WWW-Authenticate"]
    assert json.loads(refused.content)["id"] == 7


def test_a_verification_that_began_before_a_revocation_is_not_remembered():
    from django_mcp.auth import cache
    from django_mcp.auth.tokens import VerifiedToken

    user = User(username="x", pk=1)
    since = cache.generation()
    cache.forget_all()  # a token was revoked while the verification read its row
    cache.remember("k", VerifiedToken(user, frozenset(), None), 10, since)
    assert cache.recall("k") is None
    cache.remember("k", VerifiedToken(user, frozenset(), None), 10, cache.generation())
    assert cache.recall("k") is not None
    cache.forget_all()


@override_settings(USE_TZ=False)
def test_a_naive_expiry_is_remembered_until_it_passes():
    from datetime import datetime

    from django_mcp.auth import cache
    from django_mcp.auth.tokens import VerifiedToken

    soon = datetime.now() + timedelta(seconds=30)  # naive, as a token's expiry is without USE_TZ
    cache.remember("naive", VerifiedToken(User(username="y", pk=2), frozenset(), None, soon), 10, cache.generation())
    assert cache.recall("naive") is not None
    cache.forget_all()


def test_a_challenge_carries_printable_ascii_only():
    from django_mcp.auth.bearer import _quoted

    assert _quoted('kid "x"\x00\x0b\u00e9\r\n\\') == 'kid \\"x\\"?????\\\\'


async def test_a_hidden_resource_cannot_be_subscribed_to(async_client, alice):
    from tests.wire import open_session

    await sync_to_async(_token)(alice)
    session = await open_session(async_client, PATH, "tok-" + "a" * 30)
    subscribe = {"jsonrpc": "2.0", "id": 3, "method": "resources/subscribe", "params": {"uri": "users://count"}}
    answer = await async_client.post(PATH, data=json.dumps(subscribe), content_type="application/json", headers=session)
    assert json.loads(answer.content)["error"]["message"] == "Resource not found: users://count"


async def test_a_timeout_error_of_the_tool_itself_is_its_error_not_a_time_limit(async_client):
    from tests.oauth import oauth_tools

    @oauth_tools.register(name="upstream_timeout")
    async def upstream_timeout(request):
        raise TimeoutError("the upstream API did not answer")

    try:
        row, token = await sync_to_async(PersonalToken.issue)(await sync_to_async(User.objects.create_user)("t"), "t")
        answer = json.loads(
            (await _post(async_client, "tools/call", {"name": "upstream_timeout"}, token=token)).content
        )
    finally:
        oauth_tools.unregister("upstream_timeout")
    assert answer["result"]["isError"] is True
    assert "the upstream API did not answer" in answer["result"]["content"][0]["text"]
