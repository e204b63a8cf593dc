"""Running tasks in this process: a supervisor per task, control messages, and the lease heartbeat.

Each task runs as an asyncio task with a fresh context (so it does not hold
the creating request's thread or connection). The database row is the truth:
control messages through the Channels layer only wake the runner up sooner,
and the runner re-reads what it may have missed after subscribing and at
every wake-up.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import json
import logging
import uuid
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from asgiref.sync import ThreadSensitiveContext, sync_to_async
from channels.layers import get_channel_layer
from django.db import InterfaceError, OperationalError, connections

from ..conf import get_settings
from ..protocol.errors import McpJsonRpcError, missing_capability
from ..protocol.jsonrpc import notification
from ..server.lifecycle import shutting_down
from ..server.mrtr import InputRequest
from ..server.notify import abroadcast
from ..server.results import call_tool_result, exception_result
from ..server.tools import Tool
from . import store
from .models import Task, TaskStatus
from .wire import detailed_task

logger = logging.getLogger("django_mcp.tasks")

NODE = uuid.uuid4().hex
"""This server process, as recorded in the rows of the tasks it runs."""

CONTROL_TYPE = "mcp.task.control"
_INPUT_RECHECK_SECONDS = 1.0  # a waiting runner re-reads its answers at least this often

Run = Callable[["TaskContext"], Awaitable[Any]]
STOPPED: dict[str, Any] = {"code": -32603, "message": "Task interrupted: its server process stopped"}
OWNER_GONE: dict[str, Any] = {"code": -32603, "message": "Task owner stopped: its server process stopped renewing it"}
UNSTORABLE: dict[str, Any] = {"code": -32603, "message": "Task result could not be stored"}


def task_group(task_id: str) -> str:
    """The Channels group that listen streams watching this task join."""
    return f"django_mcp.task.{task_id}"


def control_group(task_id: str) -> str:
    """The Channels group the process running this task listens on for cancel and input."""
    return f"django_mcp.taskctl.{task_id}"


async def publish(task: Task) -> None:
    """Push the task's current state to every listen stream watching it, in every process."""
    await abroadcast(task_group(str(task.id)), notification("notifications/tasks", detailed_task(task)))


class TaskContext:
    """What a task's ``run(task)`` gets: its identity, its cancellation signal, and the client.

    ``signal`` is set when the task is cancelled (the run is also cancelled
    at its next ``await``). Report progress with :meth:`update`; ask the
    client with :meth:`request_input`.
    """

    def __init__(self, task: Task, tool: Tool, capabilities: Mapping[str, Any]) -> None:
        self.id = str(task.id)
        self.tool = tool
        self.arguments: dict[str, Any] = dict(task.arguments)
        self.signal = asyncio.Event()
        self._capabilities = capabilities
        self._issued: set[str] = set(task.input_keys)
        self._wake = asyncio.Event()
        self._work: asyncio.Future[Any] | None = None
        self._stopping = False
        self.gone = False  # the row is no longer active here (deleted, reaped elsewhere): nothing to record

    @property
    def cancelled(self) -> bool:
        """Whether the task should stop: ``tasks/cancel``, or the server is shutting down."""
        return self.signal.is_set()

    async def update(self, status_message: str) -> None:
        """Set the task's ``statusMessage`` (its progress channel); listeners see it at once."""
        task = await store.set_status_message(self.id, status_message)
        if task is not None:
            await publish(task)

    async def request_input(self, requests: Mapping[str, InputRequest[Any]]) -> dict[str, Any]:
        """Park the task in ``input_required`` until the client answered every request via ``tasks/update``.

        Returns the answers by the keys given (typed by the request that
        asked; unvalidated client input). A key used before in this task goes
        out under a fresh wire name (``confirm``, then ``confirm.2``) so an
        answer is never attributed to the wrong round.
        """
        if not requests:
            raise ValueError("request_input needs at least one request")
        pending: dict[str, tuple[str, InputRequest[Any]]] = {}
        for key, request in requests.items():
            if not request.declared_by(self._capabilities):
                raise missing_capability(request.required_capability)
            pending[self._fresh_key(key)] = (key, request)
        answers: dict[str, Any] = {}
        while pending:
            task = await store.park(self.id, {wk: r.to_wire() for wk, (_, r) in pending.items()})
            if task is None:  # no longer active: cancelled, reaped or deleted meanwhile
                raise self._vanished()
            await publish(task)
            retry: dict[str, tuple[str, InputRequest[Any]]] = {}
            for wire_key, raw in (await self._collect(list(pending))).items():
                key, request = pending[wire_key]
                try:
                    answers[key] = request.parse(key, raw)
                except McpJsonRpcError:  # an answer that does not fit: ask again, under a fresh key
                    retry[self._fresh_key(key)] = (key, request)
            pending = retry
        return answers

    async def _collect(self, wire_keys: list[str]) -> dict[str, Any]:
        """Wait until every key is answered; re-read the row at each wake-up (messages may be lost)."""
        collected: dict[str, Any] = {}
        while len(collected) < len(wire_keys):
            self._wake.clear()
            taken = await store.take_answers(self.id, [k for k in wire_keys if k not in collected])
            if taken is None:
                raise self._vanished()
            collected.update(taken)
            if len(collected) < len(wire_keys):
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), _INPUT_RECHECK_SECONDS)
        return collected

    def _vanished(self) -> asyncio.CancelledError:
        self.gone = True
        return asyncio.CancelledError()

    def _fresh_key(self, key: str) -> str:
        wire_key, n = key, 1
        while wire_key in self._issued:
            n += 1
            wire_key = f"{key}.{n}"
        self._issued.add(wire_key)
        return wire_key


_running: dict[str, TaskContext] = {}
_supervisors: dict[str, asyncio.Task[None]] = {}
_heartbeat: asyncio.Task[None] | None = None


def running_here(task_id: str) -> bool:
    """Whether this process runs the task."""
    return task_id in _running


def start(task: Task, tool: Tool, run: Run, capabilities: Mapping[str, Any]) -> None:
    """Run ``run(TaskContext)`` in the background, supervised (called once the row is committed)."""
    context = TaskContext(task, tool, capabilities)
    loop = asyncio.get_running_loop()
    _running[context.id] = context
    _supervisors[context.id] = loop.create_task(_supervise(context, run), context=contextvars.Context())
    _ensure_heartbeat(loop)


async def _supervise(context: TaskContext, run: Run) -> None:
    # The run's own ORM calls get a thread of their own, whose connections are closed at the end.
    async with ThreadSensitiveContext():
        work = asyncio.ensure_future(run(context))
        context._work = work
        control = asyncio.ensure_future(_control(context))
        try:
            finished = await _outcome(context, work)
            if finished is not None:
                await publish(finished)
        finally:
            control.cancel()
            _running.pop(context.id, None)
            _supervisors.pop(context.id, None)
            with contextlib.suppress(Exception):
                await sync_to_async(connections.close_all)()


async def _outcome(context: TaskContext, work: asyncio.Future[Any]) -> Task | None:
    """Record how the run ended (retrying while the database is down)."""
    ending = await _ending(context, work)
    if ending is None:
        return None
    status, fields = ending
    deadline = asyncio.get_running_loop().time() + get_settings().TASK_FINAL_WRITE_RETRY_SECONDS
    delay = 0.1
    while True:
        try:
            return await store.finish(context.id, status, **fields)
        except (OperationalError, InterfaceError):
            if asyncio.get_running_loop().time() + delay > deadline:
                logger.error(
                    "Task %s ended %s but the database stayed unavailable; its lease will lapse", context.id, status
                )
                return None
            logger.warning("Task %s: database unavailable, retrying its final write in %.1f s", context.id, delay)
            await asyncio.sleep(delay)
            delay = min(delay * 2, 5.0)
        except Exception:
            logger.exception("Task %s: could not store its outcome", context.id)
            return await store.finish(context.id, TaskStatus.FAILED, error=UNSTORABLE, message=UNSTORABLE["message"])


def _failed(error: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    return TaskStatus.FAILED, {"error": error, "message": error["message"]}


def _completed(result: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    return TaskStatus.COMPLETED, {"result": {**result, "resultType": "complete"}}


async def _ending(context: TaskContext, work: asyncio.Future[Any]) -> tuple[str, dict[str, Any]] | None:
    """How the run ended, as the terminal status and its fields (compare-and-set later); None: nothing to record."""
    try:
        value = await work
    except asyncio.CancelledError:
        if context.gone:
            return None
        if context._stopping or shutting_down():
            return _failed(STOPPED)
        if not context.cancelled:
            raise  # our supervisor itself was cancelled: leave the row to the lease
        return TaskStatus.CANCELLED, {"message": "Cancelled"}
    except McpJsonRpcError as exc:
        return _failed(exc.to_error())
    except Exception as exc:
        return _completed(exception_result(context.tool, exc))
    try:
        result = call_tool_result(context.tool, value)
        json.dumps(result)  # it is stored in a JSON column and sent as JSON
    except McpJsonRpcError as exc:
        return _failed(exc.to_error())
    except (TypeError, ValueError) as exc:
        return _completed(exception_result(context.tool, TypeError(f"the task's result is not JSON: {exc}")))
    return _completed(result)


def cancel_here(task_id: str) -> bool:
    """Cancel a task this process runs: set its signal and cancel the run. False if not running here."""
    context = _running.get(task_id)
    if context is None:
        return False
    context.signal.set()
    if context._work is not None:
        context._work.cancel()
    return True


def wake_here(task_id: str) -> bool:
    """Tell a runner of this process that answers arrived."""
    context = _running.get(task_id)
    if context is None:
        return False
    context._wake.set()
    return True


def _act_here(task_id: str, op: str) -> bool:
    return cancel_here(task_id) if op == "cancel" else wake_here(task_id)


async def deliver(task_id: str, op: str) -> None:
    """Deliver ``cancel`` or ``input`` to whichever process runs the task."""
    if _act_here(task_id, op):
        return
    layer = get_channel_layer()
    if layer is None:
        return
    try:
        await layer.group_send(control_group(task_id), {"type": CONTROL_TYPE, "op": op})
    except Exception:  # the owner also re-reads the row at its next wake-up
        logger.warning("Could not deliver %s for task %s through the channel layer", op, task_id, exc_info=True)


async def _control(context: TaskContext) -> None:
    """Listen for control messages from other processes; first re-read what may have come before."""
    layer = get_channel_layer()
    channel = None
    try:
        if layer is not None:
            channel = await layer.new_channel()
            await layer.group_add(control_group(context.id), channel)
        task = await store.reload(context.id)
        if task is not None and task.cancel_requested:
            cancel_here(context.id)
        if task is not None and task.input_responses:
            wake_here(context.id)
        while layer is not None and channel is not None:
            message = await layer.receive(channel)
            if message.get("type") == CONTROL_TYPE:
                _act_here(context.id, str(message.get("op")))
    except asyncio.CancelledError:
        raise
    except Exception:
        logger.warning("Task %s lost its control channel; relying on the database", context.id, exc_info=True)
    finally:
        if layer is not None and channel is not None:
            with contextlib.suppress(Exception):
                await layer.group_discard(control_group(context.id), channel)


def _ensure_heartbeat(loop: asyncio.AbstractEventLoop) -> None:
    global _heartbeat
    if _heartbeat is None or _heartbeat.done() or _heartbeat.get_loop() is not loop:
        _heartbeat = loop.create_task(_renew_leases(), context=contextvars.Context())


async def _renew_leases() -> None:
    """One batched update per interval renews every lease of this process and picks up DB-only cancels."""
    while _running:
        settings = get_settings()
        await asyncio.sleep(settings.TASK_LEASE_RENEW_SECONDS)
        try:
            flagged, vanished = await store.renew_leases(list(_running), settings.TASK_LEASE_SECONDS)
            for task_id in vanished:  # deleted or finished elsewhere: stop the run, record nothing
                context = _running.get(task_id)
                if context is not None:
                    context.gone = True
                    cancel_here(task_id)
            for task_id in flagged:
                cancel_here(task_id)
        except Exception:
            logger.warning("Could not renew task leases", exc_info=True)


async def stop_all(grace_seconds: float = 0) -> None:
    """Shutdown: signal every task of this process, give them ``grace_seconds``, then fail what is left."""
    contexts = list(_running.values())
    supervisors = list(_supervisors.values())
    for context in contexts:
        context.signal.set()
    if supervisors and grace_seconds > 0:
        await asyncio.wait(supervisors, timeout=grace_seconds)
    for context in contexts:
        context._stopping = True
        if context._work is not None:
            context._work.cancel()
    if supervisors:
        await asyncio.wait(supervisors, timeout=10)
