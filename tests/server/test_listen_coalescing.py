"""What a listen stream writes when notifications arrive faster than it writes, and how a worker fans one out."""

import asyncio
import json

from channels.layers import get_channel_layer

from django_mcp.protocol.jsonrpc import notification
from django_mcp.server.listen import ListenStream
from django_mcp.server.listen.fanout import Fanout
from django_mcp.server.notify import MESSAGE_TYPE
from tests.listen_streams import deliveries
from tests.waiting import until

GROUP = "coalescing.group"


def _state(task_id: str, step: int) -> dict:
    return notification(
        "notifications/tasks",
        {"taskId": task_id, "status": "working", "statusMessage": f"step {step}", "ttlMs": None},
    )


async def _send(message: dict) -> None:
    await get_channel_layer().group_send(GROUP, {"type": MESSAGE_TYPE, "message": message, "group": GROUP})


def _frames(chunk: bytes) -> list[dict]:
    return [json.loads(line[len("data: ") :]) for line in chunk.decode().splitlines() if line.startswith("data: ")]


async def _stream(queue_size: int) -> tuple[ListenStream, object]:
    stream = ListenStream(
        "sub", {"taskIds": ["t1"]}, [GROUP], [], result_meta={}, keepalive_seconds=5, queue_size=queue_size
    )
    events = stream.aevents()
    assert b"acknowledged" in await anext(events)
    return stream, events


async def _next_write(events, before=None) -> bytes:
    """The stream's next write: ``before`` runs once the stream waits for its first notification."""
    pending = asyncio.ensure_future(anext(events))  # starts the forwarder
    if before is not None:
        await before()
    return await asyncio.wait_for(pending, 2)


async def test_a_client_behind_a_busy_task_gets_its_newest_state_and_stays_open():
    """Ten states of one task queued for a stream whose queue holds two: the newest takes the older's place."""
    stream, events = await _stream(queue_size=2)
    answers = deliveries(stream)

    async def first() -> None:
        await _send(_state("t1", 0))

    assert [f["params"]["statusMessage"] for f in _frames(await _next_write(events, first))] == ["step 0"]
    for step in range(1, 11):  # nobody pulls meanwhile
        await _send(_state("t1", step))
    await until(lambda: len(answers) == 11, what="the ten states handed to the stream")
    frames = _frames(await _next_write(events))
    assert [f["params"]["statusMessage"] for f in frames] == ["step 10"]
    assert frames[0]["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == "sub"
    stream.close()
    rest = [chunk async for chunk in events]
    assert _frames(rest[-1])[0]["result"]["resultType"] == "complete"  # the graceful end: it never fell behind


async def test_a_newer_state_goes_out_after_what_was_sent_before_it():
    """A superseded state is dropped, and its task's newest state keeps its place after a later notification."""
    stream, events = await _stream(queue_size=8)
    answers = deliveries(stream)

    async def first() -> None:
        await _send(_state("t1", 1))

    assert len(_frames(await _next_write(events, first))) == 1
    for message in (  # nobody pulls meanwhile
        _state("t2", 1),
        notification("notifications/resources/updated", {"uri": "test://readme"}),  # before t1's step 2
        _state("t1", 2),
        _state("t2", 2),
        _state("t1", 3),
    ):
        await _send(message)
    await until(lambda: len(answers) == 6, what="the five notifications handed to the stream")
    said = [
        (f["method"], f["params"].get("taskId"), f["params"].get("statusMessage") or f["params"].get("uri"))
        for f in _frames(await _next_write(events))
    ]
    assert said == [
        ("notifications/resources/updated", None, "test://readme"),
        ("notifications/tasks", "t2", "step 2"),
        ("notifications/tasks", "t1", "step 3"),
    ]
    stream.close()
    [_ async for _ in events]


class _Recorder:
    def __init__(self, index: int, seen: list, all_had_it: asyncio.Event, streams: int) -> None:
        self.index, self.seen, self.all_had_it, self.streams = index, seen, all_had_it, streams

    def on_layer_message(self, message: dict) -> bool:
        self.seen.append(self.index)
        if sum(isinstance(s, int) for s in self.seen) == self.streams:
            self.all_had_it.set()
        return True


async def test_a_worker_hands_a_message_to_its_streams_a_slice_per_turn_of_the_loop(monkeypatch):
    """Between slices of streams, whatever else waits for the event loop runs (a request, say)."""
    monkeypatch.setattr(Fanout, "STREAMS_PER_TURN", 2, raising=False)
    hub = Fanout.of(get_channel_layer())
    seen: list = []
    all_had_it = asyncio.Event()
    streams = [_Recorder(i, seen, all_had_it, 5) for i in range(5)]
    for stream in streams:
        await hub.ajoin(GROUP, stream)
    stop = asyncio.Event()

    async def other_work() -> None:
        while not stop.is_set():
            seen.append("other")
            await asyncio.sleep(0)

    ticker = asyncio.ensure_future(other_work())
    try:
        await _send(_state("t1", 1))
        await asyncio.wait_for(all_had_it.wait(), 5)  # through Redis on the PostgreSQL legs
    finally:
        stop.set()
        await ticker
        for stream in streams:
            await hub.aleave(GROUP, stream)
    delivered = [i for i, s in enumerate(seen) if isinstance(s, int)]
    assert len(delivered) == 5
    between = seen[delivered[0] : delivered[-1]]
    assert between.count("other") >= 2  # after the 2nd and the 4th stream
    assert all(isinstance(s, int) for s in seen[delivered[0] : delivered[0] + 2])  # a slice at once
