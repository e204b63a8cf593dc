"""Task changes for the admin's task monitor: batched per process, published only while a monitor is open.

An open monitor (in any process) marks the shared cache (``DJANGO_MCP["SESSION_CACHE"]``); each process
reads the mark at most every :data:`CHECK_SECONDS`, and while it holds gathers the changes it makes into
one Channels message per :data:`BATCH_SECONDS` to :data:`MONITOR_GROUP`. With no monitor open a change
costs a clock read.
"""

from __future__ import annotations

import asyncio
import json
import time
import weakref
from typing import Any

from ..conf import get_settings
from ..protocol.jsonrpc import notification
from ..server.notify import abroadcast
from ..shared_caches import shared_cache
from .models import Task
from .wire import timestamp

MONITOR_GROUP = "django_mcp.monitor"
"""The Channels group every open task monitor's stream is in."""
MONITOR_METHOD = "notifications/monitor/tasks"
"""A batch's message: its ``params`` hold ``data``, the server-sent event's data (``{"tasks": [...]}`` as JSON)."""
VIEWERS_KEY = "django_mcp:monitor:open-until"
"""The shared cache's mark of an open monitor: until when (``time.time()``) one said it is open."""
CHECK_SECONDS = 2.0
BATCH_SECONDS = 1.0

_FIELDS = {"tool": "tool", "status_message": "statusMessage", "scope": "server", "node": "node"}


def monitor_fields(task: Task, deferred: set[str]) -> dict[str, Any]:
    """What a monitor shows of a change, from the fields the change loaded (never a query)."""
    fields: dict[str, Any] = {"taskId": str(task.id), "status": task.status}
    for name, key in _FIELDS.items():
        if name not in deferred:
            fields[key] = getattr(task, name)
    if "updated_at" not in deferred:
        fields["lastUpdatedAt"] = timestamp(task.updated_at)
    return fields


def _merged(gathered: dict[str, Any], change: dict[str, Any]) -> dict[str, Any]:
    """A task's fields in a batch: each field as the latest change has it. Changes are offered in the order
    they are told, which is not always the order they were made (a body may finish before its creation is
    told): the one updated later wins."""
    if change.get("lastUpdatedAt", "") < gathered.get("lastUpdatedAt", ""):
        return {**change, **gathered}
    return {**gathered, **change}


class MonitorFeed:
    """This process's side of the monitors: whether one is open somewhere, and each loop's batch of changes."""

    def __init__(self) -> None:
        self._open_until = 0.0  # as the shared cache last said
        self._open_here_until = 0.0  # as this process's own monitors say, whatever the cache does
        self._checked_at = float("-inf")
        self._reading: asyncio.Future[None] | None = None
        self._batches: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, dict[str, Any]]] = (
            weakref.WeakKeyDictionary()
        )
        self._flushing: set[asyncio.Task[None]] = set()

    async def aopen_somewhere(self) -> bool:
        """Whether a monitor said it is open, as of the last read of the mark (read if due)."""
        now = time.monotonic()
        if now - self._checked_at >= CHECK_SECONDS:
            self._checked_at = now  # before the read: concurrent changes do not read it again meanwhile
            self._reading = asyncio.ensure_future(self._aread_mark())
        reading = self._reading
        if reading is not None and not reading.done() and reading.get_loop() is asyncio.get_running_loop():
            # Changes made while it is read wait for it too: a body that ends during its creation's
            # read would otherwise go untold while the creation is told.
            await asyncio.shield(reading)
        return time.time() < max(self._open_until, self._open_here_until)

    async def _aread_mark(self) -> None:
        try:
            mark = await shared_cache(get_settings().SESSION_CACHE).aget(VIEWERS_KEY)
        except Exception:  # a monitor is best-effort: the cache's failures are the sign-in's to report
            mark = None
        self._open_until = mark if isinstance(mark, int | float) else 0.0

    def opened(self, until: float) -> None:
        """A monitor in this process is open until ``until``: its changes go out at once, not after a read."""
        self._open_here_until = max(self._open_here_until, until)

    def reset(self) -> None:
        """Forget what was read and gathered (tests: a monitor of one must not leave the next one watched)."""
        self._open_until = self._open_here_until = 0.0
        self._checked_at = float("-inf")
        self._reading = None
        self._batches.clear()

    async def aoffer(self, task: Task, deferred: set[str], *, created: bool = False) -> None:
        """Put the change in this loop's batch, sent within :data:`BATCH_SECONDS`, while a monitor is open.

        ``created``: the change is the task's creation (``"created": true`` tells a page it is new).
        """
        if not await self.aopen_somewhere():
            return
        loop = asyncio.get_running_loop()
        batch = self._batches.get(loop)
        if batch is None:
            batch = self._batches[loop] = {}
        first = not batch
        key, fields = str(task.id), monitor_fields(task, deferred)
        if created:
            fields["created"] = True
        batch[key] = _merged(batch.get(key, {}), fields)
        if first:
            loop.call_later(BATCH_SECONDS, self._flush, loop)

    def _flush(self, loop: asyncio.AbstractEventLoop) -> None:
        batch = self._batches.pop(loop, None)
        if batch:
            # Encoded here, once: the layer copies a message for each viewer (the in-memory one deep-copies
            # it), and each viewer's stream writes it as it is.
            data = json.dumps({"tasks": [*batch.values()]}, separators=(",", ":"))
            sending = loop.create_task(abroadcast(MONITOR_GROUP, notification(MONITOR_METHOD, {"data": data})))
            self._flushing.add(sending)
            sending.add_done_callback(self._flushing.discard)


feed = MonitorFeed()
"""The process's :class:`MonitorFeed`."""
