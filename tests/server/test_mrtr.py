"""Multi round-trip requests: input_required, signed requestState, capability checks."""

import json

import pytest
from django.core import signing

from tests.wire import assert_wire, call, post, request_body

ELICIT = {"elicitation": {}}


async def round_trip(client, name, arguments=None, *, capabilities=ELICIT, responses=None, state=None, **kw):
    params = {"name": name, "arguments": arguments or {}}
    if responses is not None:
        params["inputResponses"] = responses
    if state is not None:
        params["requestState"] = state
    return await call(client, "tools/call", params, meta_extra={"capabilities": capabilities}, **kw)


async def test_round_one_asks_and_round_two_completes(async_client):
    first = await round_trip(async_client, "greet_me")
    assert_wire(first, "JSONRPCResultResponse")
    result = first["result"]
    assert_wire(result, "InputRequiredResult")
    assert result["resultType"] == "input_required"
    assert result["inputRequests"] == {
        "who": {
            "method": "elicitation/create",
            "params": {
                "mode": "form",
                "message": "Who are you?",
                "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
            },
        }
    }
    assert "content" not in result
    answer = {"who": {"action": "accept", "content": {"name": "Ada"}}}
    second = await round_trip(async_client, "greet_me", responses=answer, state=result["requestState"])
    assert_wire(second, "CallToolResultResponse")
    assert second["result"]["content"] == [{"type": "text", "text": "Hello Ada"}]
    assert second["result"]["resultType"] == "complete"


async def test_declined_answer_reaches_the_handler(async_client):
    first = (await round_trip(async_client, "greet_me"))["result"]
    second = await round_trip(
        async_client, "greet_me", responses={"who": {"action": "decline"}}, state=first["requestState"]
    )
    assert second["result"]["content"][0]["text"] == "No name (decline)."


async def test_multi_round_carries_earlier_answers_in_a_new_state(async_client):
    r1 = (await round_trip(async_client, "two_step", {"item": "box"}))["result"]
    assert list(r1["inputRequests"]) == ["size"]
    r2 = (
        await round_trip(
            async_client,
            "two_step",
            {"item": "box"},
            responses={"size": {"action": "accept", "content": {"v": "L"}}},
            state=r1["requestState"],
        )
    )["result"]
    assert r2["resultType"] == "input_required"
    assert list(r2["inputRequests"]) == ["colour"]
    assert r2["requestState"] != r1["requestState"]
    r3 = await round_trip(
        async_client,
        "two_step",
        {"item": "box"},
        responses={"colour": {"action": "accept", "content": {"v": "red"}}},
        state=r2["requestState"],
    )
    assert r3["result"]["content"][0]["text"] == "box: {'v': 'L'} {'v': 'red'}"


async def test_missing_response_re_asks_and_extra_keys_are_ignored(async_client):
    state = (await round_trip(async_client, "greet_me"))["result"]["requestState"]
    again = await round_trip(async_client, "greet_me", responses={"other": {"action": "accept"}}, state=state)
    assert again["result"]["resultType"] == "input_required"
    assert list(again["result"]["inputRequests"]) == ["who"]
    extra = {"who": {"action": "accept", "content": {"name": "Bo"}}, "unrelated": 5}
    done = await round_trip(async_client, "greet_me", responses=extra, state=state)
    assert done["result"]["content"][0]["text"] == "Hello Bo"


async def test_sync_handlers_can_ask(async_client):
    state = (await round_trip(async_client, "sync_confirm"))["result"]["requestState"]
    done = await round_trip(
        async_client, "sync_confirm", responses={"ok": {"action": "accept", "content": {"ok": True}}}, state=state
    )
    assert done["result"]["content"][0]["text"] == "confirmed=True"


@pytest.mark.parametrize(
    "mutate",
    [
        lambda s: s + "-TAMPERED",
        # A signature character well inside the base64 (not the last one, whose low bits are
        # padding) swapped for a different one: the decoded signature always changes.
        lambda s: s[:-5] + ("A" if s[-5] != "A" else "B") + s[-4:],
        lambda s: "garbage",
        lambda s: 42,
    ],
)
async def test_tampered_state_is_rejected(async_client, mutate):
    state = (await round_trip(async_client, "greet_me"))["result"]["requestState"]
    tampered = mutate(state)
    assert tampered != state
    params = {
        "name": "greet_me",
        "arguments": {},
        "inputResponses": {"who": {"action": "accept", "content": {"name": "Eve"}}},
        "requestState": tampered,
    }
    response = await post(async_client, request_body("tools/call", params, capabilities=ELICIT))
    assert response.status_code == 400
    error = json.loads(response.content)["error"]
    assert error["code"] == -32602
    assert "requestState" in error["message"]


async def test_state_is_bound_to_the_tool_and_arguments(async_client):
    state = (await round_trip(async_client, "two_step", {"item": "box"}))["result"]["requestState"]
    size = {"size": {"action": "accept", "content": {}}}
    response = await post(
        async_client,
        request_body(
            "tools/call",
            {"name": "two_step", "arguments": {"item": "car"}, "inputResponses": size, "requestState": state},
            capabilities=ELICIT,
        ),
    )
    assert json.loads(response.content)["error"]["code"] == -32602


async def test_state_is_bound_to_the_principal(async_client):
    headers_alice = {"Authorization": "Bearer alice-token"}
    headers_bob = {"Authorization": "Bearer bob-token"}
    first = await round_trip(async_client, "greet_me", path="/mcp-bearer/", headers=headers_alice)
    state = first["result"]["requestState"]
    answer = {"who": {"action": "accept", "content": {"name": "Alice"}}}
    stolen = await post(
        async_client,
        request_body(
            "tools/call", {"name": "greet_me", "inputResponses": answer, "requestState": state}, capabilities=ELICIT
        ),
        path="/mcp-bearer/",
        headers=headers_bob,
    )
    error = json.loads(stolen.content)["error"]
    assert error["code"] == -32602 and "another request or principal" in error["message"]
    own = await round_trip(
        async_client, "greet_me", responses=answer, state=state, path="/mcp-bearer/", headers=headers_alice
    )
    assert own["result"]["content"][0]["text"] == "Hello Alice"


async def test_expired_state_is_rejected(async_client, settings):
    state = (await round_trip(async_client, "greet_me"))["result"]["requestState"]
    payload = signing.loads(state, salt="django_mcp.mrtr.request-state")
    old = signing.TimestampSigner(salt="django_mcp.mrtr.request-state")
    # Re-sign the same payload with a timestamp 1000 s in the past.
    import time
    from unittest import mock

    with mock.patch.object(time, "time", return_value=time.time() - 1000):
        expired = signing.dumps(payload, salt="django_mcp.mrtr.request-state", compress=True)
    assert old.unsign_object(expired)  # still a valid signature
    settings.DJANGO_MCP = {**settings.DJANGO_MCP, "MRTR_STATE_MAX_AGE_SECONDS": 60}
    response = await post(
        async_client,
        request_body(
            "tools/call",
            {"name": "greet_me", "inputResponses": {"who": {"action": "cancel"}}, "requestState": expired},
            capabilities=ELICIT,
        ),
    )
    error = json.loads(response.content)["error"]
    assert error["code"] == -32602 and "expired" in error["message"]


async def test_undeclared_request_kind_is_never_sent(async_client):
    response = await post(async_client, request_body("tools/call", {"name": "greet_me"}, capabilities={"sampling": {}}))
    assert response.status_code == 400
    body = json.loads(response.content)
    assert_wire(body, "MissingRequiredClientCapabilityError")
    assert body["error"]["data"] == {"requiredCapabilities": {"elicitation": {}}}


async def test_handler_can_check_before_asking(async_client):
    r = await round_trip(async_client, "ask_model", capabilities={})
    assert r["result"]["content"][0]["text"] == "no sampling"
    first = (await round_trip(async_client, "ask_model", capabilities={"sampling": {}}))["result"]
    assert first["inputRequests"]["q"]["method"] == "sampling/createMessage"
    assert first["inputRequests"]["q"]["params"]["maxTokens"] == 10
    reply = {"q": {"role": "assistant", "content": {"type": "text", "text": "Paris"}, "model": "m"}}
    done = await round_trip(
        async_client, "ask_model", capabilities={"sampling": {}}, responses=reply, state=first["requestState"]
    )
    assert done["result"]["content"][0]["text"] == "model said: Paris"


async def test_roots_request(async_client):
    first = (await round_trip(async_client, "my_roots", capabilities={"roots": {}}))["result"]
    assert first["inputRequests"] == {"roots": {"method": "roots/list", "params": {}}}
    reply = {"roots": {"roots": [{"uri": "file:///a"}, {"uri": "file:///b", "name": "B"}]}}
    done = await round_trip(
        async_client, "my_roots", capabilities={"roots": {}}, responses=reply, state=first["requestState"]
    )
    assert done["result"]["content"][0]["text"] == "file:///a,file:///b"


@pytest.mark.parametrize(
    "responses",
    [None, [], {"who": 12345}, {"who": {"action": "maybe"}}, {"who": {"action": "accept", "content": "x"}}],
)
async def test_malformed_input_responses_are_32602(async_client, responses):
    params = {"name": "greet_me", "inputResponses": responses}
    response = await post(async_client, request_body("tools/call", params, capabilities=ELICIT))
    assert response.status_code == 400
    assert json.loads(response.content)["error"]["code"] == -32602


async def test_opt_in_validation_against_the_requested_schema(async_client):
    state = (await round_trip(async_client, "strict_form"))["result"]["requestState"]
    bad = {"age": {"action": "accept", "content": {"age": "old"}}}
    response = await post(
        async_client,
        request_body(
            "tools/call", {"name": "strict_form", "inputResponses": bad, "requestState": state}, capabilities=ELICIT
        ),
    )
    error = json.loads(response.content)["error"]
    assert error["code"] == -32602 and "requested schema" in error["message"]
    good = {"age": {"action": "accept", "content": {"age": 41}}}
    done = await round_trip(async_client, "strict_form", responses=good, state=state)
    assert done["result"]["content"][0]["text"] == "age=41"


async def test_input_required_is_never_returned_by_other_methods(async_client):
    for method in ("tools/list", "server/discover"):
        r = await call(async_client, method, {"inputResponses": {}}, meta_extra={"capabilities": ELICIT})
        assert r["result"]["resultType"] == "complete"


# -- single-use requestState: a destructive action runs once per confirmation ----------------------------

SURE = {"sure": {"action": "accept", "content": {"name": "yes"}}}


@pytest.fixture
def deleted():
    from tests.toolapp.tools import DELETED

    DELETED.clear()
    yield DELETED
    DELETED.clear()


async def confirmed(client, name, arguments):
    state = (await round_trip(client, name, arguments))["result"]["requestState"]
    return state, await round_trip(client, name, arguments, responses=SURE, state=state)


async def test_a_destructive_tools_state_is_single_use(async_client, deleted):
    state, first = await confirmed(async_client, "delete_thing", {"name": "f"})
    assert first["result"]["content"] == [{"type": "text", "text": "deleted f"}]
    for _ in range(3):  # the README's delete_file ran 4 times this way
        replay = await round_trip(async_client, "delete_thing", {"name": "f"}, responses=SURE, state=state)
        assert replay["error"]["code"] == -32602 and "already used" in replay["error"]["message"]
    assert deleted == ["f"]


async def test_each_round_consumes_its_state_and_a_new_request_gets_a_new_one(async_client, deleted):
    await confirmed(async_client, "delete_thing", {"name": "a"})
    await confirmed(async_client, "delete_thing", {"name": "a"})  # the same call again, confirmed again
    assert deleted == ["a", "a"]


async def test_a_state_without_an_answer_yet_is_consumed_too(async_client, deleted):
    state = (await round_trip(async_client, "delete_thing", {"name": "g"}))["result"]["requestState"]
    asked_again = await round_trip(async_client, "delete_thing", {"name": "g"}, state=state)  # no answers: asked again
    assert asked_again["result"]["resultType"] == "input_required"
    replay = await round_trip(async_client, "delete_thing", {"name": "g"}, responses=SURE, state=state)
    assert "already used" in replay["error"]["message"]
    final = await round_trip(
        async_client, "delete_thing", {"name": "g"}, responses=SURE, state=asked_again["result"]["requestState"]
    )
    assert final["result"]["content"] == [{"type": "text", "text": "deleted g"}] and deleted == ["g"]


@pytest.mark.parametrize("name, single_use", [("delete_thing_replayable", False), ("once_only", True)])
async def test_the_tool_option_overrides_the_annotation(async_client, deleted, name, single_use):
    state, _ = await confirmed(async_client, name, {"name": "h"} if name != "once_only" else {})
    arguments = {"name": "h"} if name != "once_only" else {}
    replay = await round_trip(async_client, name, arguments, responses=SURE, state=state)
    assert ("error" in replay) is single_use


async def test_greet_me_is_not_destructive_and_may_be_replayed(async_client):
    answer = {"who": {"action": "accept", "content": {"name": "Ada"}}}
    state = (await round_trip(async_client, "greet_me"))["result"]["requestState"]
    for _ in range(2):
        again = await round_trip(async_client, "greet_me", responses=answer, state=state)
        assert again["result"]["content"] == [{"type": "text", "text": "Hello Ada"}]


async def test_an_unavailable_cache_answers_503_and_runs_nothing(async_client, deleted, monkeypatch):
    from django.core.cache import caches

    state = (await round_trip(async_client, "delete_thing", {"name": "i"}))["result"]["requestState"]
    cache = caches["default"]

    def down(*args, **kwargs):
        raise ConnectionError("cache down")

    monkeypatch.setattr(type(cache), "add", down)
    refused = await round_trip(async_client, "delete_thing", {"name": "i"}, responses=SURE, state=state)
    assert refused["error"]["code"] == -32603 and "cache is unavailable" in refused["error"]["message"]
    assert deleted == []


@pytest.fixture
def database_session_cache(settings, transactional_db):
    from django.core.management import call_command

    settings.CACHES = {
        **settings.CACHES,
        "mcpdb": {"BACKEND": "django.core.cache.backends.db.DatabaseCache", "LOCATION": "mcp_used_states"},
    }
    call_command("createcachetable", "mcp_used_states", verbosity=0)
    settings.DJANGO_MCP = {**settings.DJANGO_MCP, "SESSION_CACHE": "mcpdb"}


async def test_single_use_works_with_a_database_cache(async_client, deleted, database_session_cache):
    # The record of use is written with the cache's async API: a database cache refuses sync calls
    # from the event loop (SynchronousOnlyOperation), which answered 503 "cache is unavailable".
    state, first = await confirmed(async_client, "delete_thing", {"name": "db"})
    assert first["result"]["content"] == [{"type": "text", "text": "deleted db"}]
    replay = await round_trip(async_client, "delete_thing", {"name": "db"}, responses=SURE, state=state)
    assert "already used" in replay["error"]["message"] and deleted == ["db"]
