"""Running tasks in this process: a supervisor per task, one control channel, and the maintenance loop.

Each :class:`McpTasks` plugin owns one :class:`TaskRunner`. A task runs as an
asyncio task with a fresh context (so it does not hold the creating request's
thread or connection). The database row is the truth: control messages through
the Channels layer only wake the runner up sooner, and the maintenance loop
(one batched query per interval) renews leases, picks up cancels and answers
whose message was lost, and fails other processes' tasks whose lease lapsed.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import json
import logging
import os
import socket
import sys
import time
import uuid
from collections.abc import Mapping
from typing import Any

from asgiref.sync import ThreadSensitiveContext, sync_to_async
from channels.layers import get_channel_layer
from django.db import InterfaceError, OperationalError, connections
from django.utils import timezone

from ..compat import request_thread_executors
from ..protocol.errors import McpJsonRpcError, internal_error
from ..server import telemetry
from ..server.lifecycle import shutting_down
from ..server.listen import open_listen_streams
from ..server.results import call_tool_result, exception_result
from ..server.tools.definition import Tool
from .conf import get_tasks_settings
from .context import Run, RunningTask, begin_run_within
from .models import NodeRole, Task, TaskStatus
from .notify import anotify_changed
from .store import TaskStore
from .store.errors import aretried_while_down

logger = logging.getLogger("django_mcp.tasks")

CONTROL_TYPE = "mcp.task.control"

"""A task body: ``async def run(task)`` or ``def run(task)`` (run in a thread), returning the tool result."""

STOPPED = internal_error("Task interrupted: its server process stopped").to_error()
OWNER_GONE = internal_error("Task owner stopped: its server process stopped renewing it").to_error()


def never_started(timeout: float) -> dict[str, Any]:
    """The error of a fleet task no worker started within ``TASK_QUEUED_TIMEOUT_SECONDS``."""
    return internal_error(
        f"No worker started the task within its queue timeout ({timeout:g} s): is the fleet running?"
    ).to_error()


UNSTORABLE = internal_error("Task result could not be stored").to_error()


def control_group(node: str) -> str:
    """The Channels group a runner (``Task.node``) listens on for cancel and input of the tasks it runs."""
    return f"django_mcp.taskctl.{node}"


CONTROL_REJOIN_SECONDS = 3600.0
"""How often a runner joins its control group again (channel layers expire group members, after a day by default)."""


def _command() -> str:
    """What this process runs, as a person would name it: ``daphne project.asgi:application``,
    ``manage.py db_worker``, ``celery -A project worker``."""
    program = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else "python"
    if program == "__main__.py":  # python -m celery
        program = os.path.basename(os.path.dirname(sys.argv[0]))
    return " ".join([program, *sys.argv[1:3]])[:255]


class TaskRunner:
    """The tasks one plugin runs in this process, and the loop that keeps their rows honest."""

    def __init__(self, store: TaskStore, server: str = "") -> None:
        self.store = store
        self.server = server
        """The server (URL namespace) whose tasks this runner runs."""
        self.node = uuid.uuid4().hex
        """This runner, as recorded in the rows of the tasks it runs and in its :class:`~.models.Node` row."""
        self.role = NodeRole.WEB
        """What this process is to the monitor: a fleet worker's runner is told so by its first job."""
        self._running: dict[str, RunningTask] = {}
        self._supervisors: dict[str, asyncio.Task[None]] = {}
        self._maintenance: asyncio.Task[None] | None = None
        self._channel: str | None = None
        self._receiver: asyncio.Task[None] | None = None
        self._joined_at: float | None = None
        self._early: dict[str, set[str]] = {}  # control that came for a task between its commit and its start
        # Since when this process reaches the database without a break (its maintenance said so): -inf
        # until it first fails; None while it fails. See may_reap().
        self._reachable_since: float | None = float("-inf")

    def running_here(self, task_id: str) -> bool:
        """Whether this runner runs the task."""
        return task_id in self._running

    # -- running -------------------------------------------------------------------------

    def expect(self, task_id: str) -> None:
        """Hold control for a task about to be committed with this runner's node, until :meth:`start`."""
        self._early[task_id] = set()

    def unexpect(self, task_id: str) -> None:
        """The expected task will not start here (its row was not committed, or not claimed)."""
        self._early.pop(task_id, None)

    def start(self, task: Task, tool: Tool, run: Run, capabilities: Mapping[str, Any]) -> asyncio.Task[None]:
        """Run ``run(running)`` in the background, supervised (called once the row is committed)."""
        running = RunningTask(self.store, task, tool, capabilities)
        # In the creating request, inside its span; on a fleet worker, from the row.
        running.creator_link = telemetry.creator_link() or telemetry.link_to(task.traceparent)
        loop = asyncio.get_running_loop()
        self._running[running.id] = running
        for op in self._early.pop(running.id, ()):
            self.act_here(running.id, op)
        supervisor = loop.create_task(self._asupervise(running, run), context=contextvars.Context())
        self._supervisors[running.id] = supervisor
        self.ensure_maintenance(loop)
        return supervisor

    async def _asupervise(self, running: RunningTask, run: Run) -> None:
        # One asyncio task runs the body and then records how it ended: a running task holds no second
        # task, and no coroutine of ours but this one, around its body's.
        # The run's own ORM calls get a thread of their own, whose connections are closed at the end.
        async with ThreadSensitiveContext() as thread_context:
            try:
                try:
                    if running.cancelled:  # cancelled before it started
                        ending = _ending_of_cancel(running)
                    else:
                        running.work = asyncio.current_task()
                        try:
                            value = await begin_run_within(run, running, running.tool)
                        except asyncio.CancelledError:
                            if not _cancelled_here(running):
                                raise  # our supervisor itself was cancelled: leave the row to the lease
                            ending = _ending_of_cancel(running)
                        except Exception as exc:
                            ending = _ending_of_error(running, exc)
                        else:
                            ending = _ending_of_value(running, value)
                        finally:
                            running.work = None
                        _forget_cancels_sent(running)
                    finished = await self._arecord(running, *ending) if ending is not None else None
                finally:
                    # Its outcome is recorded: no lease to renew, no control to take, while it is published.
                    self._running.pop(running.id, None)
                if finished is not None:
                    await anotify_changed(finished)
            finally:
                self._supervisors.pop(running.id, None)
                # Only a run that used its thread has connections there; asking an unused thread context to
                # close them would start a thread (and a joiner) per task just to find none.
                executors = request_thread_executors()
                if executors is not None and thread_context in executors[1]:
                    with contextlib.suppress(Exception):
                        await sync_to_async(connections.close_all)()

    async def _arecord(self, running: RunningTask, status: str, fields: dict[str, Any]) -> Task | None:
        """Record how the run ended (retrying while the database is down)."""
        retry_for = get_tasks_settings().TASK_FINAL_WRITE_RETRY_SECONDS
        try:
            return await aretried_while_down(
                lambda: self.store.afinish(running.id, status, **fields), retry_for, f"Task {running.id}'s final write"
            )
        except (OperationalError, InterfaceError):
            logger.error(
                "Task %s ended %s but the database stayed unavailable; its lease will lapse", running.id, status
            )
            return None
        except Exception:
            logger.exception("Task %s: could not store its outcome", running.id)
            return await self.store.afinish(
                running.id, TaskStatus.FAILED, error=UNSTORABLE, message=UNSTORABLE["message"]
            )

    # -- control ---------------------------------------------------------------------------

    def act_here(self, task_id: str, op: str) -> bool:
        """Cancel or wake a task this runner runs (or is about to). False if it does not run here."""
        running = self._running.get(task_id)
        if running is None:
            early = self._early.get(task_id)
            if early is None:
                return False
            early.add(op)
            return True
        if running.span is not None:
            running.span.add_event("tasks/cancel" if op == "cancel" else "tasks/update")
        if op == "cancel":
            running.mark_cancelled()
            if running.work is not None:
                running.work.cancel()
        else:
            running.wake()
        return True

    async def adeliver(self, task: Task, op: str) -> None:
        """Deliver ``cancel`` or ``input`` to whichever runner runs the task (``task.node``)."""
        if not self.act_here(str(task.id), op) and task.node:
            await asend_control(task.node, str(task.id), op)

    async def acontrol_ready(self) -> None:
        """Listen on this runner's control group; call before committing a row with this runner's node.

        One channel and one group per runner, joined before any of its tasks exists, so no control
        message can come before the runner listens (and a task costs no join or leave of its own).
        """
        layer = get_channel_layer()
        if layer is None:
            return
        loop = asyncio.get_running_loop()
        try:
            if self._channel is None or self._receiver is None or self._receiver.done():
                self._channel, self._joined_at = await layer.new_channel(), None
                self._receiver = loop.create_task(self._areceive(layer, self._channel), context=contextvars.Context())
            if self._joined_at is None or loop.time() - self._joined_at > CONTROL_REJOIN_SECONDS:
                await layer.group_add(control_group(self.node), self._channel)
                self._joined_at = loop.time()
        except Exception:
            logger.warning("No task control channel; relying on the database", exc_info=True)

    async def _areceive(self, layer: Any, channel: str) -> None:
        try:
            while True:
                message = await layer.receive(channel)
                if message.get("type") == CONTROL_TYPE:
                    self.act_here(str(message.get("task")), str(message.get("op")))
        except asyncio.CancelledError:
            raise
        except Exception:
            logger.warning("The task control channel failed; relying on the database until the next task")

    # -- maintenance ------------------------------------------------------------------------

    def ensure_maintenance(self, loop: asyncio.AbstractEventLoop | None = None) -> None:
        """Start the maintenance loop on ``loop`` (the running one by default) unless it runs there."""
        loop = loop or asyncio.get_running_loop()
        if self._maintenance is None or self._maintenance.done() or self._maintenance.get_loop() is not loop:
            self._maintenance = loop.create_task(self._amaintain(), context=contextvars.Context())

    def may_reap(self) -> bool:
        """Whether this process may fail tasks whose lease lapsed: not until it has reached the database
        for a whole lease since it last could not. When the database was down for both, a lapsed lease
        says nothing of its owner, which renews it within a renew interval of the database's return."""
        since = self._reachable_since
        if since is None:
            return False
        # The store's door also finds outages, in processes whose maintenance does not run (WSGI).
        since = max(since, self.store.outage.last_lost)
        return time.monotonic() - since >= get_tasks_settings().TASK_LEASE_SECONDS

    def _database_reached(self, reached: bool) -> None:
        if not reached:
            self._reachable_since = None
        elif self._reachable_since is None:
            self._reachable_since = time.monotonic()

    async def _amaintain(self) -> None:
        """Every renew interval: renew this runner's leases, pick up missed control, reap dead owners' tasks."""
        failures = 0
        while True:
            settings = get_tasks_settings()
            await asyncio.sleep(settings.TASK_LEASE_RENEW_SECONDS)
            try:
                await self.amaintain_once(settings.TASK_LEASE_SECONDS)
                failures = 0
                self._database_reached(True)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                if isinstance(exc, OperationalError | InterfaceError):
                    self._database_reached(False)
                failures += 1
                if failures == 1 or failures % 60 == 0:  # a bounded number of lines during an outage
                    logger.warning("Task maintenance failed (%d in a row): %s", failures, exc)

    async def amaintain_once(self, lease_seconds: float) -> None:
        if self._running:
            await self.acontrol_ready()  # stays in its group while long tasks run
            flagged, answered, vanished = await self.store.arenew_leases(list(self._running), lease_seconds)
            for task_id in vanished:  # deleted or finished elsewhere: stop the run, record nothing
                running = self._running.get(task_id)
                if running is not None:
                    running.gone = True
                    self.act_here(task_id, "cancel")
            for task_id in flagged:
                self.act_here(task_id, "cancel")
            for task_id in answered:
                self.act_here(task_id, "input")
        await self.store.asweep_expired_batch()  # creation sweeps only at a cap: keep the table tidy here
        # Also this runner's own rows that it does not run: committed by a request that was cancelled
        # before it could start the task (their lease is never renewed).
        if self.may_reap():
            for reaped in await self.store.areap_lapsed(list(self._running), OWNER_GONE):
                await anotify_changed(reaped)
        queued_timeout = get_tasks_settings().TASK_QUEUED_TIMEOUT_SECONDS
        if queued_timeout is not None:
            for stale in await self.store.afail_stale_queued(queued_timeout, never_started(queued_timeout)):
                await anotify_changed(stale)
        await self.arecord_node()  # last: the monitor's figure never holds up the upkeep above

    async def arecord_node(self) -> None:
        """Write this runner's :class:`~.models.Node` row: the monitor's sign that this process is alive."""
        await self.store.arecord_node(
            self.node,
            timezone.now(),
            server=self.server,
            role=self.role,
            host=socket.gethostname()[:255],
            pid=os.getpid(),
            command=_command(),
            running=len(self._running),
            listen_streams=open_listen_streams(),
        )

    async def astop(self, grace_seconds: float = 0) -> None:
        """Shutdown: signal every task of this runner, give them ``grace_seconds``, then fail what is left."""
        tasks = list(self._running.values())
        supervisors = list(self._supervisors.values())
        for running in tasks:
            running.mark_cancelled()
        if supervisors and grace_seconds > 0:
            await asyncio.wait(supervisors, timeout=grace_seconds)
        for running in tasks:
            running.stopping = True
            if running.work is not None:
                running.work.cancel()
        if supervisors:
            await asyncio.wait(supervisors, timeout=10)
        for background in (self._maintenance, self._receiver):
            if background is not None:
                background.cancel()


async def asend_control(node: str, task_id: str, op: str) -> None:
    """Send ``cancel`` or ``input`` for a task to the runner ``node``, through the Channels layer."""
    layer = get_channel_layer()
    if layer is None:
        return  # the owner finds the flag or the answers in the row at its next maintenance
    try:
        await layer.group_send(control_group(node), {"type": CONTROL_TYPE, "task": task_id, "op": op})
    except Exception:
        logger.warning("Could not deliver %s for task %s through the channel layer", op, task_id)


Ending = tuple[str, dict[str, Any]]
"""How a run ended: its terminal status and the fields to store with it (compare-and-set)."""


def _failed(error: dict[str, Any]) -> Ending:
    return TaskStatus.FAILED, {"error": error, "message": error["message"]}


def _completed(result: dict[str, Any]) -> Ending:
    return TaskStatus.COMPLETED, {"result": {**result, "resultType": "complete"}}


def _cancelled_here(running: RunningTask) -> bool:
    """Whether this runner cancelled the run (tasks/cancel, shutdown, its row gone elsewhere)."""
    return running.cancelled or running.stopping or running.gone or shutting_down()


def _ending_of_cancel(running: RunningTask) -> Ending | None:
    """How a run this runner cancelled ended (None: its row is gone, nothing to record)."""
    if running.gone:
        return None
    if running.stopping or shutting_down():
        return _failed(STOPPED)
    return TaskStatus.CANCELLED, {"message": "Cancelled"}


def _ending_of_error(running: RunningTask, exc: Exception) -> Ending:
    if isinstance(exc, McpJsonRpcError):
        return _failed(exc.to_error())
    if isinstance(exc, OperationalError | InterfaceError):
        # The task's own bookkeeping (or its body) lost the database: that is the server's failure,
        # never an isError result the tool did not produce.
        logger.error("Task %s lost the database: %s", running.id, exc)
        return _failed(internal_error("Task failed: the database was unavailable").to_error())
    return _completed(exception_result(running.tool, exc))


def _ending_of_value(running: RunningTask, value: Any) -> Ending:
    try:
        result = call_tool_result(running.tool, value)
        json.dumps(result)  # it is stored in a JSON column and sent as JSON
    except McpJsonRpcError as exc:
        return _failed(exc.to_error())
    except (TypeError, ValueError) as exc:
        return _completed(exception_result(running.tool, TypeError(f"the task's result is not JSON: {exc}")))
    return _completed(result)


def _forget_cancels_sent(running: RunningTask) -> None:
    # The body is over: the cancels this runner sent it (one per tasks/cancel, maintenance pass or stop)
    # are taken back, so the final write and its publishing (asyncio.timeout, task groups) run in a task
    # that is no longer being cancelled.
    if _cancelled_here(running):
        task = asyncio.current_task()
        while task is not None and task.cancelling():
            task.uncancel()
