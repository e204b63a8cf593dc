"""Regression tests for the "Hardening" issue, listen streams: honest pushes, cheap and bounded streams.

In-process, over the ASGI application as daphne drives it (``tests.test_listen.Stream``), on the
in-memory channel layer; an outage is the layer's ``send``/``group_send`` raising (what the Redis
pub/sub layer does while Redis is down: its ``receive`` just keeps waiting) or dropping messages
(a subscriber that silently lost its connection). ``tests/live/test_outages.py`` does the same with
real daphne workers and a real Redis stopped and started.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import threading
import time
import weakref
from typing import Any
from unittest import mock

import pytest
from asgiref.testing import ApplicationCommunicator
from channels.layers import get_channel_layer
from django.core.asgi import get_asgi_application

from django_mcp.server import notify
from django_mcp.server.listen import ListenStream, open_listen_streams
from django_mcp.server.notify import MESSAGE_TYPE, abroadcast
from django_mcp.server.outages import throttle
from tests.listen_streams import Stream, deliveries, listen
from tests.waiting import move_monotonic, until
from tests.wire import post, request_body

SUB = "io.modelcontextprotocol/subscriptionId"
FAST = {"LISTEN_LAYER_CHECK_SECONDS": 0.05, "LISTEN_LAYER_TIMEOUT_SECONDS": 0.3}


@pytest.fixture
def fast_checks(settings):
    settings.DJANGO_MCP = {**settings.DJANGO_MCP, **FAST}


@pytest.fixture(autouse=True)
def _fresh_throttle():
    """Each test sees the first failure of an outage (the throttles are process-wide)."""
    if hasattr(notify, "throttle"):  # (names missing before the fix fail their own test only)
        throttle.reset()
    yield


def _unavailable(frame: Any) -> bool:
    return (
        isinstance(frame, dict)
        and frame.get("error", {}).get("code") == -32603
        and frame["error"]["message"].startswith("Notifications are unavailable")
    )


async def _until_end(stream: Stream, timeout: float = 3.0) -> list[Any]:
    frames = []
    deadline = time.monotonic() + timeout
    while not stream.ended:
        try:
            frames.append(await stream.frame(timeout=max(0.01, deadline - time.monotonic())))
        except StopAsyncIteration:
            break
        except ValueError:  # the empty closing chunk
            break
    return [f for f in frames if f != ": keepalive"]


async def _silent(*args: Any, **kwargs: Any) -> None:
    """A layer call that takes the message and delivers nothing (a subscriber that lost its connection)."""


# -- A: pushes are honest --------------------------------------------------------------------------------


async def test_a_layer_that_fails_ends_every_open_stream_with_the_error(async_client, fast_checks):
    tools = await listen(async_client, {"toolsListChanged": True}, id="t")
    both = await listen(
        async_client, {"toolsListChanged": True, "promptsListChanged": True}, id="b", path="/mcp-content/"
    )
    assert (await tools.frame())["method"] == "notifications/subscriptions/acknowledged"
    await both.frame()
    layer = get_channel_layer()
    down = ConnectionError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")
    with mock.patch.object(layer, "send", side_effect=down), mock.patch.object(layer, "group_send", side_effect=down):
        ends = [await _until_end(tools), await _until_end(both)]
    for frames, sid in zip(ends, ("t", "b"), strict=True):
        assert _unavailable(frames[-1]), frames
        assert frames[-1]["id"] == sid
        assert "channel layer failed" in frames[-1]["error"]["message"]
    assert open_listen_streams() == 0


@pytest.mark.parametrize(("failure", "said"), [("hangs", "did not answer within 0.3 s"), ("raises", "layer failed")])
async def test_a_layer_that_cannot_subscribe_a_stream_refuses_it(async_client, fast_checks, caplog, failure, said):
    layer = get_channel_layer()

    async def hangs(*args: Any, **kwargs: Any) -> None:
        await asyncio.Event().wait()

    async def raises(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("a bug in the layer")

    with mock.patch.object(layer, "group_add", hangs if failure == "hangs" else raises):
        frames = await _until_end(await listen(async_client, {"toolsListChanged": True}, id="s"))
    assert _unavailable(frames[-1]) and frames[-1]["id"] == "s" and said in frames[-1]["error"]["message"], frames
    assert "could not subscribe" in caplog.text


async def test_a_probe_that_never_comes_back_ends_the_streams(async_client, fast_checks):
    stream = await listen(async_client, {"toolsListChanged": True})
    await stream.frame()
    layer = get_channel_layer()
    with mock.patch.object(layer, "send", _silent), mock.patch.object(layer, "group_send", _silent):
        frames = await _until_end(stream)
    assert _unavailable(frames[-1]) and "did not answer within 0.3 s" in frames[-1]["error"]["message"]


async def test_listening_during_an_outage_is_refused_at_once_and_works_again_after(async_client, fast_checks):
    stream = await listen(async_client, {"toolsListChanged": True})
    await stream.frame()
    layer = get_channel_layer()
    down = ConnectionError("refused")
    with mock.patch.object(layer, "send", side_effect=down), mock.patch.object(layer, "group_send", side_effect=down):
        assert _unavailable((await _until_end(stream))[-1])
        started = time.monotonic()
        again = await listen(async_client, {"toolsListChanged": True}, id="again")
        refused = await _until_end(again)
        assert time.monotonic() - started < 1.0
        assert len(refused) == 1 and _unavailable(refused[0]) and refused[0]["id"] == "again"
    # The layer is back: the next listen checks it at once and streams.
    back = await listen(async_client, {"toolsListChanged": True}, id="back")
    assert (await back.frame())["method"] == "notifications/subscriptions/acknowledged"
    await back.close()


async def test_a_failed_publish_ends_the_local_streams_of_its_group_at_once(async_client, settings):
    settings.DJANGO_MCP = {**settings.DJANGO_MCP, "LISTEN_LAYER_CHECK_SECONDS": 60}  # no periodic check here
    tools = await listen(async_client, {"toolsListChanged": True}, id="tools", path="/mcp-content/")
    prompts = await listen(async_client, {"promptsListChanged": True}, id="prompts", path="/mcp-content/")
    await tools.frame()
    await prompts.frame()
    layer = get_channel_layer()
    from tests.servers import content_tools

    real_send = layer.group_send

    async def flaky(group: str, message: dict[str, Any]) -> None:
        if group == content_tools.channel_group:
            raise ConnectionError("connection reset by peer")
        await real_send(group, message)

    with mock.patch.object(layer, "group_send", flaky):
        await abroadcast(content_tools.channel_group, {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
        frames = await _until_end(tools, timeout=1.0)
    assert _unavailable(frames[-1]) and "could not be published" in frames[-1]["error"]["message"]
    # The layer answers its check: the other group's stream stays open.
    with pytest.raises(TimeoutError):
        await prompts.frame(timeout=0.3)
    await prompts.close()


async def test_the_handshake_get_stream_ends_with_the_error_too(async_client, fast_checks, db):
    from tests.session_calls import initialize

    session, _ = await initialize(async_client)
    stream = await _get_stream(session)
    layer = get_channel_layer()
    down = ConnectionError("refused")
    with mock.patch.object(layer, "send", side_effect=down), mock.patch.object(layer, "group_send", side_effect=down):
        frames = await _until_end(stream)
    assert _unavailable(frames[-1]) and "id" not in frames[-1]  # no request to answer on a GET stream


async def test_a_reconnected_subscriber_ends_the_streams_open_while_it_was_away():
    """channels_redis re-subscribes after a reconnection; what was published meanwhile is gone."""
    from django_mcp.server.listen import LayerWatch

    class Connection:
        def __init__(self) -> None:
            self.callbacks: list[weakref.WeakMethod[Any]] = []

        def register_connect_callback(self, callback: Any) -> None:
            self.callbacks.append(weakref.WeakMethod(callback))

        def reconnect(self) -> None:
            for ref in self.callbacks:
                callback = ref()
                if callback is not None:
                    callback(self)

    connection = Connection()

    class Shard:
        _pubsub = type("PubSub", (), {"connection": connection})()

    class PubSubLayer:  # the shape of channels_redis.pubsub.RedisPubSubChannelLayer
        def _get_layer(self) -> Any:
            return type("LoopLayer", (), {"_shards": [Shard()]})()

    watch = LayerWatch(PubSubLayer())
    stream = ListenStream("r", {}, ["g"], [], result_meta={}, keepalive_seconds=5, queue_size=4)
    watch.streams.add(stream)
    watch._hook_reconnects()
    watch._hook_reconnects()  # once per connection
    assert len(connection.callbacks) == 1
    connection.reconnect()
    assert stream._failed is not None and "reconnected" in stream._failed
    assert watch.healthy  # the layer is back: new streams need no check first


async def test_failed_publishes_log_a_bounded_number_of_lines(caplog):
    layer = get_channel_layer()
    caplog.set_level(logging.WARNING, logger="django_mcp")
    with mock.patch.object(layer, "group_send", side_effect=ConnectionError("Connection refused")):
        for _ in range(500):
            await abroadcast("some.group", {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
    records = [r for r in caplog.records if r.name == "django_mcp"]
    assert len(records) == 1, [r.getMessage() for r in records[:5]]
    assert records[0].exc_info is not None  # one traceback, for the first one
    await abroadcast("some.group", {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
    assert "works again (after 500 failure(s))" in caplog.records[-1].getMessage()


def test_the_redis_layers_repeated_tracebacks_are_summarised():
    """channels_redis logs a traceback a second per connection while Redis is down: one a minute passes."""
    from django_mcp.server.outages import RepeatFilter, quiet_layer_logs

    quiet_layer_logs()
    quiet_layer_logs()
    redis_logger = logging.getLogger("channels_redis.pubsub")
    assert sum(isinstance(f, RepeatFilter) for f in redis_logger.filters) == 1
    passed: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            passed.append(record)

    handler = Keep()
    redis_logger.addHandler(handler)
    try:
        for _ in range(150):
            try:
                raise ConnectionError("Error 111 connecting")
            except ConnectionError:
                redis_logger.exception("Unexpected exception in receive task")
    finally:
        redis_logger.removeHandler(handler)
    assert len(passed) == 1 and passed[0].exc_info is not None


def test_the_repeat_filter_reports_how_many_it_held_back():
    from django_mcp.server.outages import RepeatFilter

    f = RepeatFilter(window=0.0)
    record = logging.LogRecord("x", logging.ERROR, __file__, 1, "boom", None, None)
    assert f.filter(record)
    f.window = 60
    for _ in range(3):
        assert not f.filter(logging.LogRecord("x", logging.ERROR, __file__, 1, "boom", None, None))
    f.window = 0
    later = logging.LogRecord("x", logging.ERROR, __file__, 1, "boom", None, None)
    assert f.filter(later) and "3 more like this" in later.getMessage()


# -- C: cheap and bounded ---------------------------------------------------------------------------------


async def test_an_open_listen_stream_holds_no_thread(async_client):
    """Django keeps a thread per request until its response ends; a listen stream gives its own back."""
    before = threading.active_count()
    streams = [await listen(async_client, {"toolsListChanged": True}, id=i) for i in range(8)]
    for stream in streams:
        await stream.frame()
    # The requests' executor threads exit once each response has begun; 8 held would never come down.
    await until(lambda: threading.active_count() - before <= 1, what="the open streams' threads to go")
    for stream in streams:
        await stream.close()


async def test_streams_ending_at_once_start_a_bounded_number_of_threads(async_client, settings):
    """3,000 streams dropping at once started 2,834 threads: each request's end ran on a thread of its own."""
    settings.DJANGO_MCP = {**settings.DJANGO_MCP, "LISTEN_MAX_STREAMS_PER_PRINCIPAL": None}
    opened_at = threading.active_count()
    streams = [await listen(async_client, {"toolsListChanged": True}, id=i) for i in range(60)]
    for stream in streams:
        await stream.frame()
    await until(lambda: threading.active_count() <= opened_at + 1, what="the opening requests' threads to go")
    before = threading.active_count()
    peak, sampling = [before], True

    def sample() -> None:
        while sampling:
            peak.append(threading.active_count())
            time.sleep(0.0005)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    await asyncio.gather(*(stream.close() for stream in streams))
    sampling = False
    sampler.join()
    started = max(peak) - before - 1  # the sampler itself
    assert started <= 8, f"{started} threads started while 60 streams ended"


async def test_listen_streams_per_principal_are_capped(async_client, settings):
    settings.DJANGO_MCP = {**settings.DJANGO_MCP, "LISTEN_MAX_STREAMS_PER_PRINCIPAL": 2}
    alice = {"Authorization": "Bearer alice-token"}
    opened = [await _open(f"a{i}", "/mcp-bearer/", alice) for i in range(2)]
    refused = await post(async_client, _listen_body("a3"), path="/mcp-bearer/", headers=alice)
    assert refused.status_code == 429
    assert refused["Content-Type"].startswith("application/json")
    error = json.loads(refused.content)
    assert error["id"] == "a3"
    assert error["error"]["code"] == -32603 and error["error"]["message"].startswith("Too many listen streams")
    assert error["error"]["data"] == {"maxListenStreamsPerPrincipal": 2}
    # Another principal has its own allowance.
    bob = await _open("b1", "/mcp-bearer/", {"Authorization": "Bearer bob-token"})
    # A stream that ends gives its place back.
    await opened[0].close()
    replacement = await _open("a4", "/mcp-bearer/", alice)
    for stream in (opened[1], bob, replacement):
        await stream.close()


async def test_anonymous_listen_streams_are_capped_per_client_address(async_client, settings):
    """On an open server, one anonymous client filling its allowance locks out nobody else."""
    settings.DJANGO_MCP = {**settings.DJANGO_MCP, "LISTEN_MAX_STREAMS_PER_PRINCIPAL": 2}
    opened = [await _open(f"x{i}", "/mcp/", {}, ("10.0.0.1", 4000 + i)) for i in range(2)]
    with pytest.raises(AssertionError):  # the third from the same address: 429, no acknowledgement
        await _open("x3", "/mcp/", {}, ("10.0.0.1", 4100))
    other = await _open("y1", "/mcp/", {}, ("10.0.0.2", 4000))
    for stream in (*opened, other):
        await stream.close()


async def test_listen_streams_per_process_are_capped(async_client, settings):
    settings.DJANGO_MCP = {**settings.DJANGO_MCP, "LISTEN_MAX_STREAMS": 2}
    streams = [
        await _open("anon", "/mcp/", {}),
        await _open("alice", "/mcp-bearer/", {"Authorization": "Bearer alice-token"}),
    ]
    refused = await post(
        async_client, _listen_body("bob"), path="/mcp-bearer/", headers={"Authorization": "Bearer bob-token"}
    )
    assert refused.status_code == 429
    assert json.loads(refused.content)["error"]["data"] == {"maxListenStreams": 2}
    for stream in streams:
        await stream.close()


async def test_handshake_get_streams_count_against_the_same_cap(async_client, settings, db):
    from tests.session_calls import initialize

    settings.DJANGO_MCP = {**settings.DJANGO_MCP, "LISTEN_MAX_STREAMS_PER_PRINCIPAL": 1}
    session, _ = await initialize(async_client)
    first = await _get_stream(session)
    second = await _get_stream(session, status=429)
    body = json.loads(second)
    assert body["error"]["code"] == -32603 and body["error"]["data"] == {"maxListenStreamsPerPrincipal": 1}
    # The modern listen stream of the same principal on the same server is the same client.
    refused = await post(async_client, _listen_body("modern"))
    assert refused.status_code == 429
    await first.close()


async def test_resource_subscriptions_are_capped_at_1000(async_client):
    uris = [f"test://users/{i}/profile" for i in range(1001)]
    response = await post(
        async_client,
        request_body("subscriptions/listen", {"notifications": {"resourceSubscriptions": uris}}),
        path="/mcp-content/",
    )
    assert response.status_code == 400
    error = json.loads(response.content)["error"]
    assert error["code"] == -32602 and "at most 1000" in error["message"]
    stream = await listen(async_client, {"resourceSubscriptions": uris[:1000]}, path="/mcp-content/")
    # A thousand groups, each a channel of its own on the in-memory layer, whose receive() walks every
    # channel: on a loaded machine the first frame can take seconds.
    assert len((await stream.frame(timeout=15))["params"]["notifications"]["resourceSubscriptions"]) == 1000
    await stream.close()


async def test_a_flood_of_list_changes_costs_one_write_and_never_overflows_the_queue():
    stream = ListenStream(
        "flood", {"toolsListChanged": True}, ["flood.group"], [], result_meta={}, keepalive_seconds=5, queue_size=2
    )
    answers = deliveries(stream)
    events = stream.aevents()
    assert b"acknowledged" in await anext(events)  # its group joined: what is sent now waits for the forwarder
    pending = asyncio.ensure_future(anext(events))  # starts the forwarder
    layer = get_channel_layer()
    change = {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}
    for _ in range(50):  # nobody pulls meanwhile
        await layer.group_send("flood.group", {"type": "mcp.notification", "message": change})
    other = {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "x"}}
    await layer.group_send("flood.group", {"type": "mcp.notification", "message": other})
    await until(lambda: len(answers) == 51, what="the flood handed to the stream")
    chunks = [await pending]
    while b"notifications/message" not in chunks[-1]:
        chunks.append(await asyncio.wait_for(anext(events), 1))
    written = b"".join(chunks)
    # The first change may be taken before the flood arrives; the rest collapse into one.
    assert len(chunks) <= 2 and written.count(b"list_changed") <= 2, written
    assert written.count(b"notifications/message") == 1
    assert b"resultType" not in written  # not closed for falling behind
    await events.aclose()


async def test_the_write_budget_spreads_writes_over_time(settings):
    from django_mcp.server.listen.limits import WriteBudget

    settings.DJANGO_MCP = {**settings.DJANGO_MCP, "LISTEN_WRITES_PER_SECOND": 100}
    budget = WriteBudget()
    started = time.monotonic()
    await asyncio.gather(*(budget.atake() for _ in range(105)))  # 5 at once (50 ms' worth), then 100 a second
    assert 0.9 <= time.monotonic() - started < 2.5
    settings.DJANGO_MCP = {**settings.DJANGO_MCP, "LISTEN_WRITES_PER_SECOND": None}
    started = time.monotonic()
    await asyncio.gather(*(WriteBudget().atake() for _ in range(1000)))
    assert time.monotonic() - started < 0.5


# -- helpers -------------------------------------------------------------------------------------------------


def _listen_body(id: str) -> dict[str, Any]:
    return request_body("subscriptions/listen", {"notifications": {"toolsListChanged": True}}, id=id)


async def _open(id: str, path: str, headers: dict[str, str], client=("127.0.0.1", 5000)) -> Stream:
    stream = await Stream.open(_listen_body(id), path, headers, client)
    assert (await stream.frame())["method"] == "notifications/subscriptions/acknowledged"
    return stream


async def _get_stream(session: str, path: str = "/mcp/", status: int = 200) -> Any:
    """A handshake-era GET stream through the ASGI application; the raw body when refused."""
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [
            (b"host", b"testserver"),
            (b"accept", b"text/event-stream"),
            (b"mcp-session-id", session.encode()),
            (b"mcp-protocol-version", b"2025-11-25"),
        ],
        "client": ("127.0.0.1", 5000),
        "server": ("testserver", 80),
    }
    communicator = ApplicationCommunicator(get_asgi_application(), scope)
    await communicator.send_input({"type": "http.request", "body": b""})
    start = await communicator.receive_output(timeout=2)
    assert start["status"] == status, start
    if status != 200:
        body = b""
        while True:
            message = await communicator.receive_output(timeout=2)
            body += message.get("body", b"")
            if not message.get("more_body"):
                return body
    return Stream(communicator, {k.decode().lower(): v.decode() for k, v in start["headers"]})


# -- C: one layer channel per group per process ------------------------------------------------------------


@pytest.fixture
def process_fanout(settings):
    settings.DJANGO_MCP = {**settings.DJANGO_MCP, "LISTEN_FANOUT": "process"}


def _layer_members() -> int:
    layer = get_channel_layer()
    return sum(len(members) for members in getattr(layer, "groups", {}).values())


async def test_process_fanout_receives_each_message_once_for_all_streams(async_client, process_fanout):
    from django_mcp.server.listen.fanout import Fanout
    from tests.servers import content_prompts

    layer = get_channel_layer()
    before = _layer_members()
    streams = [
        await listen(async_client, {"toolsListChanged": True, "promptsListChanged": True}, id=i, path="/mcp-content/")
        for i in range(5)
    ]
    for stream in streams:
        await stream.frame()
    assert _layer_members() == before + 2  # one channel per group, not per stream
    assert Fanout.of(layer).members() == 10
    content_prompts.register(lambda request: "x", name="fanout_prompt")
    try:
        frames = [await stream.frame() for stream in streams]
    finally:
        content_prompts.unregister("fanout_prompt")
    assert all(f["method"] == "notifications/prompts/list_changed" for f in frames)
    assert [f["params"]["_meta"][SUB] for f in frames] == list(range(5))
    for stream in streams:
        await stream.close()
    assert _layer_members() == before
    assert Fanout.of(layer).groups == {}


class _SlowLayer:
    """The layer's ``group_send`` held until released: Redis is slow today."""

    def __init__(self, layer: Any) -> None:
        self.sent: list[dict[str, Any]] = []
        self.release, self.reached = asyncio.Event(), asyncio.Event()
        self.real_send = layer.group_send

    async def group_send(self, group: str, message: dict[str, Any]) -> None:
        self.sent.append(message)
        self.reached.set()
        await self.release.wait()
        await self.real_send(group, message)


async def test_process_fanout_a_final_message_reaches_its_own_loops_streams_before_the_layer(
    async_client, process_fanout
):
    from tests.servers import content_tools

    layer = get_channel_layer()
    group = content_tools.channel_group
    streams = [await listen(async_client, {"toolsListChanged": True}, id=i, path="/mcp-content/") for i in range(2)]
    for stream in streams:
        await stream.frame()
    slow = _SlowLayer(layer)
    changed = {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}
    with mock.patch.object(layer, "group_send", slow.group_send):
        # Not final: it goes through the layer only, as before.
        publish = asyncio.ensure_future(abroadcast(group, changed))
        await slow.reached.wait()
        for stream in streams:
            with pytest.raises(TimeoutError):
                await stream.frame(timeout=0.1)
        slow.release.set()
        await publish
        assert [(await stream.frame())["method"] for stream in streams] == ["notifications/tools/list_changed"] * 2
        # Final: this loop's streams have it while the layer still holds it.
        slow.release.clear()
        slow.reached.clear()
        publish = asyncio.ensure_future(abroadcast(group, changed, final=True))
        await slow.reached.wait()
        frames = [await stream.frame(timeout=0.1) for stream in streams]
        # A stream that joins meanwhile is not among them: the layer's copy is its to have.
        late = await listen(async_client, {"toolsListChanged": True}, id="late", path="/mcp-content/")
        await late.frame()
        slow.release.set()
        await publish
    assert all(f["method"] == "notifications/tools/list_changed" for f in frames)
    assert [m.get("final") for m in slow.sent] == [None, True]
    assert (await late.frame(timeout=3))["method"] == "notifications/tools/list_changed"
    # The layer's copy is not delivered twice, and what of the group comes after the final message
    # (another process's earlier state still on its way) is dropped.
    stale = {"type": MESSAGE_TYPE, "message": {**changed, "params": {"stale": True}}, "group": group}
    await layer.group_send(group, stale)
    for stream in [*streams, late]:
        with pytest.raises(TimeoutError):
            await stream.frame(timeout=0.3)
        await stream.close()


async def test_process_fanout_a_final_message_is_taken_by_its_own_loops_streams_before_the_layer_sends_it(
    async_client, process_fanout
):
    from django_mcp.server.listen.fanout import Fanout
    from tests.servers import content_tools

    layer = get_channel_layer()
    group = content_tools.channel_group
    stream = await listen(async_client, {"toolsListChanged": True}, id="first", path="/mcp-content/")
    await stream.frame()
    (listening,) = Fanout.of(layer).groups[group].streams
    for _ in range(300):  # until it waits on its queue (past its snapshot and setup)
        if listening._queue._getters:  # type: ignore[attr-defined]
            break
        await asyncio.sleep(0.01)
    else:
        pytest.fail("the stream never waited on its queue")
    real_send, queued_at_send = layer.group_send, []

    async def recording(group_name: str, message: dict[str, Any]) -> None:
        queued_at_send.append(listening._queue.qsize())
        await real_send(group_name, message)

    changed = {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}
    with mock.patch.object(layer, "group_send", recording):
        await abroadcast(group, changed, final=True)
    assert queued_at_send == [0]  # its stream had taken it off its queue before the layer's turn
    assert (await stream.frame(timeout=3))["method"] == "notifications/tools/list_changed"
    # Cancelled while its streams take it, the publisher still publishes (other processes need it), then stops.
    queued_at_send.clear()
    with mock.patch.object(layer, "group_send", recording):
        publishing = asyncio.ensure_future(abroadcast(group, changed, final=True))
        await asyncio.sleep(0)  # it handed the message to the stream and yields
        publishing.cancel()
        with pytest.raises(asyncio.CancelledError):
            await publishing
    assert queued_at_send == [0]
    await stream.close()


async def test_process_fanout_a_final_message_waits_for_the_loops_earlier_message_still_on_its_way(
    async_client, process_fanout
):
    """E.g. a task body's last status message, then its end: the stream sees both, in that order."""
    from tests.servers import content_tools

    layer = get_channel_layer()
    group = content_tools.channel_group
    stream = await listen(async_client, {"toolsListChanged": True}, id="s", path="/mcp-content/")
    await stream.frame()
    slow = _SlowLayer(layer)
    # Not a list change: two of those queued together are sent as one.
    first = {"jsonrpc": "2.0", "method": "notifications/test", "params": {"n": 1}}
    last = {"jsonrpc": "2.0", "method": "notifications/test", "params": {"n": 2}}
    with mock.patch.object(layer, "group_send", slow.group_send):
        earlier = asyncio.ensure_future(abroadcast(group, first))
        await slow.reached.wait()
        final = asyncio.ensure_future(abroadcast(group, last, final=True))
        with pytest.raises(TimeoutError):  # not ahead of the first one
            await stream.frame(timeout=0.2)
        slow.release.set()
        await asyncio.gather(earlier, final)
    assert [(await stream.frame(timeout=3))["params"]["n"] for _ in range(2)] == [1, 2]
    with pytest.raises(TimeoutError):
        await stream.frame(timeout=0.3)
    await stream.close()


async def test_process_fanout_gives_up_on_its_messages_that_never_come_back(
    async_client, process_fanout, fast_checks, monkeypatch
):
    """Its stream left while it was on its way: after the layer's timeout it holds nothing back."""
    from django_mcp.server.listen import fanout
    from django_mcp.server.listen.fanout import Fanout
    from tests.servers import content_prompts, content_tools

    clock = move_monotonic(monkeypatch, fanout)

    layer = get_channel_layer()
    leaving = await listen(async_client, {"toolsListChanged": True}, id="a", path="/mcp-content/")
    staying = await listen(async_client, {"promptsListChanged": True}, id="b", path="/mcp-content/")
    for stream in (leaving, staying):
        await stream.frame()
    hub = Fanout.of(layer)
    slow = _SlowLayer(layer)
    with mock.patch.object(layer, "group_send", slow.group_send):
        lost = asyncio.ensure_future(abroadcast(content_tools.channel_group, {"method": "notifications/test"}))
        await slow.reached.wait()
        await leaving.close()
        while content_tools.channel_group in hub.groups:
            await asyncio.sleep(0.01)
        slow.release.set()
        await lost
    lost_tags = set(hub._on_the_way)
    assert len(lost_tags) == 1  # nobody here reads it back
    clock.ahead += FAST["LISTEN_LAYER_TIMEOUT_SECONDS"] + 0.05
    # Any later publish lets it go (a server may never publish a final message).
    await abroadcast(content_prompts.channel_group, {"method": "notifications/test"})
    assert (await staying.frame(timeout=3))["method"] == "notifications/test"
    assert not lost_tags & set(hub._on_the_way)
    slow = _SlowLayer(layer)
    with mock.patch.object(layer, "group_send", slow.group_send):
        final = asyncio.ensure_future(
            abroadcast(content_prompts.channel_group, {"method": "notifications/test"}, final=True)
        )
        await slow.reached.wait()
        assert (await staying.frame(timeout=0.5))["method"] == "notifications/test"  # at once, not held back
        slow.release.set()
        await final
    assert hub._on_the_way == {}
    await staying.close()


async def test_a_failing_publish_hook_does_not_cost_the_publish(async_client, caplog):
    stream = await listen(async_client, {"toolsListChanged": True}, id="h", path="/mcp-content/")
    await stream.frame()

    def broken(sender: Any, **kwargs: Any) -> None:
        raise RuntimeError("receiver bug")

    from tests.servers import content_tools

    changed = {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}
    notify.before_broadcast.connect(broken, weak=False)
    try:
        await abroadcast(content_tools.channel_group, changed)
    finally:
        notify.before_broadcast.disconnect(broken)
    assert (await stream.frame(timeout=3))["method"] == "notifications/tools/list_changed"
    assert "receiver bug" in caplog.text  # logged by Django's send_robust
    assert not throttle.failing("publish")  # the layer took it
    await stream.close()


@pytest.mark.parametrize(("mode", "said"), [("process", "redis went away"), ("stream", "the channel layer failed")])
async def test_a_failing_layer_ends_the_groups_streams(async_client, settings, fast_checks, caplog, mode, said):
    """With a reader per group (``process``) or per stream (``stream``, which logs it once)."""
    settings.DJANGO_MCP = {**settings.DJANGO_MCP, "LISTEN_FANOUT": mode}
    layer = get_channel_layer()
    broken = asyncio.Event()

    async def receive(channel: str) -> Any:
        await broken.wait()
        raise ConnectionError("redis went away")

    with mock.patch.object(layer, "receive", receive):
        streams = [await listen(async_client, {"toolsListChanged": True}, id=f"s{i}") for i in range(3)]
        for stream in streams:
            await stream.frame()
        broken.set()
        ends = [await _until_end(stream) for stream in streams]
    for frames in ends:
        assert _unavailable(frames[-1]) and said in frames[-1]["error"]["message"], frames
    assert mode == "process" or "lost the channel layer; closing it: ConnectionError('redis went away')" in caplog.text


@pytest.mark.parametrize("mode", ["stream", "process"])
async def test_the_get_stream_follows_its_sessions_subscriptions(async_client, settings, db, mode):
    from django_mcp import anotify_resource_updated
    from django_mcp.server.listen.limits import open_streams
    from tests.session_calls import initialize, rpc

    settings.DJANGO_MCP = {**settings.DJANGO_MCP, "LISTEN_FANOUT": mode}
    session, _ = await initialize(async_client, path="/mcp-content/")
    stream = await _get_stream(session, path="/mcp-content/")
    assert await stream.frame(timeout=1) == ": open"  # the first bytes, at once (not at the first keepalive)
    (get_stream,) = [s for s in open_streams if s.handshake]
    joined_at_open = list(get_stream.joined)
    status, body = await rpc(
        async_client, session, "resources/subscribe", {"uri": "test://readme"}, path="/mcp-content/"
    )
    assert (status, body["result"]) == (200, {})
    # The stream joins the resource's group when told, a moment later (later still on a loaded machine):
    # tell of an update until one reaches it, then let the repeats that were on their way arrive.
    deadline, told = asyncio.get_running_loop().time() + 10, 0
    while True:
        await anotify_resource_updated("test://readme")
        told += 1
        try:
            frame = await stream.frame(timeout=0.3)
            break
        except TimeoutError:
            assert asyncio.get_running_loop().time() < deadline, "the stream never joined the resource's group"
    assert frame == {"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": "test://readme"}}
    for _ in range(told - 1):
        with contextlib.suppress(TimeoutError):
            await stream.frame(timeout=0.3)
    await rpc(async_client, session, "resources/unsubscribe", {"uri": "test://readme"}, path="/mcp-content/")
    await until(lambda: get_stream.joined == joined_at_open, what="the GET stream to leave the resource's group")
    await anotify_resource_updated("test://readme")
    with pytest.raises(TimeoutError):
        await stream.frame(timeout=0.3)
    await stream.close()


@pytest.mark.django_db(transaction=True)
async def test_releasing_the_request_thread_closes_its_database_connections_first():
    """A pooled connection left in a dead thread would never go back to its pool."""
    from asgiref.sync import SyncToAsync, ThreadSensitiveContext, sync_to_async
    from django.db import connections

    from django_mcp.server.listen.threads import _stream_end_executor, arelease_request_thread

    def touch() -> Any:
        wrapper = connections["default"]  # this thread's own
        wrapper.ensure_connection()
        return wrapper, threading.get_ident()

    async with ThreadSensitiveContext():
        wrapper, thread = await sync_to_async(touch)()
        assert wrapper.connection is not None
        context = SyncToAsync.thread_sensitive_context.get()
        assert context in SyncToAsync.context_to_thread_executor
        await arelease_request_thread()
        assert wrapper.connection is None  # closed in its own thread, before that thread went
        assert SyncToAsync.context_to_thread_executor[context] is _stream_end_executor

        def touch_and_close() -> int:
            # One call: the shared pool may run a second call on another of its threads.
            end, ident = touch()
            end.close()
            return ident

        again = await sync_to_async(touch_and_close)()  # a later sync call of the request: on the shared pool
        assert again != thread
