"""subscriptions/listen: acknowledgement, filtering, delivery through the Channels layer, cleanup."""

import asyncio
import json

import pytest
from channels.layers import get_channel_layer

from django_mcp import close_listen_streams, notify_resource_updated, registry
from django_mcp.server.listen import open_listen_streams
from tests.listen_streams import deliveries, listen
from tests.servers import content_prompts, content_tools
from tests.waiting import until
from tests.wire import assert_wire, post, request_body

SUB = "io.modelcontextprotocol/subscriptionId"


def _in_memory_members():
    layer = get_channel_layer()
    return sum(len(members) for members in getattr(layer, "groups", {}).values())


async def test_first_frame_is_the_acknowledgement_with_the_honoured_filter(async_client):
    stream = await listen(async_client, {"toolsListChanged": True, "promptsListChanged": True, "extra": 1})
    ack = await stream.frame()
    assert_wire(ack, "SubscriptionsAcknowledgedNotification")
    # The default test server has tools but no prompts: only toolsListChanged is honoured.
    assert ack == {
        "jsonrpc": "2.0",
        "method": "notifications/subscriptions/acknowledged",
        "params": {"notifications": {"toolsListChanged": True}, "_meta": {SUB: "L1"}},
    }
    assert stream.headers["x-accel-buffering"] == "no"
    await stream.close()


async def test_subscription_id_keeps_the_json_type_of_the_request_id(async_client):
    stream = await listen(async_client, {}, id=7)
    assert (await stream.frame())["params"]["_meta"][SUB] == 7
    await stream.close()


async def test_tool_list_changes_reach_the_stream_tagged_with_the_subscription(async_client):
    stream = await listen(async_client, {"toolsListChanged": True})
    await stream.frame()

    def temp(request):
        return "t"

    registry.register(temp, name="temp_tool")
    try:
        frame = await stream.frame()
        assert_wire(frame, "ToolListChangedNotification")
        assert frame == {
            "jsonrpc": "2.0",
            "method": "notifications/tools/list_changed",
            "params": {"_meta": {SUB: "L1"}},
        }
    finally:
        registry.unregister("temp_tool")
    assert (await stream.frame())["method"] == "notifications/tools/list_changed"
    await stream.close()


async def test_filter_is_honoured(async_client):
    tools_stream = await listen(async_client, {"toolsListChanged": True}, id="t", path="/mcp-content/")
    prompts_stream = await listen(async_client, {"promptsListChanged": True}, id="p", path="/mcp-content/")
    await tools_stream.frame()
    await prompts_stream.frame()
    content_prompts.register(lambda request: "x", name="temp_prompt")
    try:
        assert (await prompts_stream.frame())["method"] == "notifications/prompts/list_changed"
        content_tools.register(lambda request: "x", name="temp_tool2")
        content_tools.unregister("temp_tool2")
        assert (await tools_stream.frame())["method"] == "notifications/tools/list_changed"
        # The prompts stream must not have received the tools change.
        with pytest.raises(TimeoutError):
            await prompts_stream.frame(timeout=0.3)
    finally:
        content_prompts.unregister("temp_prompt")
        await tools_stream.close()
        await prompts_stream.close()


async def test_resource_subscriptions_deliver_updates_for_known_uris_only(async_client):
    wanted = ["test://readme", "test://users/5/profile", "test://unknown"]
    stream = await listen(async_client, {"resourceSubscriptions": wanted}, path="/mcp-content/")
    ack = await stream.frame()
    assert ack["params"]["notifications"] == {"resourceSubscriptions": ["test://readme", "test://users/5/profile"]}
    notify_resource_updated("test://logo")  # not subscribed
    notify_resource_updated("test://users/5/profile")
    frame = await stream.frame()
    assert_wire(frame, "ResourceUpdatedNotification")
    assert frame["params"] == {"uri": "test://users/5/profile", "_meta": {SUB: "L1"}}
    await stream.close()


async def test_keepalive_comments_on_an_idle_stream(async_client, settings):
    settings.DJANGO_MCP = {**settings.DJANGO_MCP, "LISTEN_KEEPALIVE_SECONDS": 0.05}
    stream = await listen(async_client, {"toolsListChanged": True})
    await stream.frame()
    assert (await stream.frame()) == ": keepalive"
    await stream.close()


async def test_graceful_close_sends_the_listen_result(async_client):
    stream = await listen(async_client, {"toolsListChanged": True}, id="bye")
    await stream.frame()
    assert close_listen_streams() >= 1
    final = await stream.frame()
    assert_wire(final, "JSONRPCResultResponse")
    assert final["id"] == "bye"
    assert final["result"]["resultType"] == "complete"
    assert final["result"]["_meta"][SUB] == "bye"
    assert final["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "django-mcp-tests"
    assert await stream.next_chunk() == b""
    assert stream.ended


async def test_a_slow_client_is_closed_not_buffered():
    """While the body generator is not pulled (a client that does not read), the bounded queue fills up."""
    from django_mcp.server.listen import ListenStream

    stream = ListenStream(
        "slow", {"toolsListChanged": True}, ["slow.group"], [], result_meta={}, keepalive_seconds=5, queue_size=2
    )
    answers = deliveries(stream)
    events = stream.aevents()
    assert b"acknowledged" in await anext(events)  # its group joined: what is sent now waits for the forwarder
    first = asyncio.ensure_future(anext(events))  # starts the forwarder, then waits for a message
    layer = get_channel_layer()
    await layer.group_send("slow.group", {"type": "mcp.notification", "message": {"method": "a"}})
    assert b'"method":"a"' in await first
    for n in range(10):  # nobody pulls now: two fit, the third overflows
        await layer.group_send("slow.group", {"type": "mcp.notification", "message": {"method": f"m{n}"}})
    await until(lambda: False in answers, what="the stream to fall behind")
    rest = [chunk async for chunk in events]
    assert len(rest) <= 2  # at most what the queue holds, the close included: never all ten
    final = json.loads(rest[-1].decode().split("data: ", 1)[1])
    assert final["id"] == "slow" and final["result"]["resultType"] == "complete"
    assert "slow.group" not in getattr(layer, "groups", {})


async def test_disconnect_releases_every_group_membership(async_client):
    before = _in_memory_members()
    streams = [
        await listen(async_client, {"toolsListChanged": True, "promptsListChanged": True}, id=i, path="/mcp-content/")
        for i in range(5)
    ]
    for s in streams:
        await s.frame()
    assert _in_memory_members() == before + 2  # one layer channel per group per worker, not 5 x 2
    assert open_listen_streams() == 5
    for s in streams:
        await s.close()
    assert _in_memory_members() == before
    assert open_listen_streams() == 0


@pytest.mark.parametrize(
    "params",
    [
        {},
        {"notifications": True},
        {"notifications": {"toolsListChanged": "yes"}},
        {"notifications": {"resourceSubscriptions": "test://readme"}},
    ],
)
async def test_bad_filters_are_plain_json_errors(async_client, params):
    response = await post(async_client, request_body("subscriptions/listen", params))
    assert response.status_code == 400
    assert response["Content-Type"].startswith("application/json")
    assert json.loads(response.content)["error"]["code"] == -32602


async def test_without_a_channel_layer_subscriptions_are_refused_clearly(async_client, settings):
    settings.CHANNEL_LAYERS = {}
    caps = json.loads((await post(async_client, request_body("server/discover"))).content)["result"]["capabilities"]
    assert caps["tools"] == {"listChanged": False}
    # Nothing can be honoured, so the stream is just the acknowledgement (and keepalives).
    stream = await listen(async_client, {"toolsListChanged": True})
    assert (await stream.frame())["params"]["notifications"] == {}
    await stream.close()
