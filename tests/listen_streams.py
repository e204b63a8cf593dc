"""Reading a subscriptions/listen stream in-process."""

import asyncio
import json
from typing import Any

from asgiref.testing import ApplicationCommunicator
from django.core.asgi import get_asgi_application

from tests.wire import asgi_scope, request_body


class Stream:
    """A listen stream driven through the ASGI app as daphne drives it, read one SSE frame at a time."""

    def __init__(self, communicator, headers):
        self.communicator = communicator
        self.headers = headers
        self._buffer = b""
        self.ended = False

    @classmethod
    async def open(cls, body, path, headers=None, client=("127.0.0.1", 5000)):
        scope = asgi_scope(body, headers, path=path, client=client)
        communicator = ApplicationCommunicator(get_asgi_application(), scope)
        await communicator.send_input({"type": "http.request", "body": json.dumps(body).encode()})
        start = await communicator.receive_output(timeout=2)
        assert start["type"] == "http.response.start"
        headers = {k.decode().lower(): v.decode() for k, v in start["headers"]}
        assert start["status"] == 200, start
        assert headers["content-type"] == "text/event-stream"
        return cls(communicator, headers)

    async def next_chunk(self, timeout=2.0):
        if self.ended:
            raise StopAsyncIteration
        # Not receive_output(): on a timeout it cancels the application.
        message = await asyncio.wait_for(self.communicator.output_queue.get(), timeout)
        if not message.get("more_body", False):
            self.ended = True
        return message.get("body", b"")

    async def frame(self, timeout=2.0):
        while b"\n\n" not in self._buffer:
            self._buffer += await self.next_chunk(timeout)
        block, self._buffer = self._buffer.split(b"\n\n", 1)
        if block.startswith(b":"):
            return block.decode()
        data = [line[6:] for line in block.decode().splitlines() if line.startswith("data: ")]
        return json.loads("".join(data))

    async def close(self):
        """The client goes away."""
        await self.communicator.send_input({"type": "http.disconnect"})
        await self.communicator.wait(timeout=2)


async def listen(client, notifications, *, id="L1", path="/mcp/", **meta_extra):
    body = request_body("subscriptions/listen", {"notifications": notifications}, id=id, **meta_extra)
    return await Stream.open(body, path)


def deliveries(stream: Any) -> list[bool]:
    """What ``stream.deliver`` answered to each layer message handed to it from now on (False: it fell behind).

    A test waits on this list instead of sleeping while the stream's forwarder works through a flood.
    """
    answers: list[bool] = []
    deliver = stream.deliver

    def counted(message: dict[str, Any]) -> bool:
        answers.append(deliver(message))
        return answers[-1]

    stream.deliver = counted
    return answers
