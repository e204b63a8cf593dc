"""What a task body gets: the task's context (:class:`TaskContext`), inline or run by the runner."""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Awaitable, Callable, Mapping
from functools import partial
from typing import TYPE_CHECKING, Any, cast

from asgiref.sync import async_to_sync, iscoroutinefunction, sync_to_async
from django.db import InterfaceError, OperationalError

from ..protocol.errors import INTERNAL_ERROR, McpJsonRpcError, missing_capability
from ..server import telemetry
from ..server.mrtr import InputRequest
from ..server.outages import throttle
from ..server.request import McpRequest
from ..server.tools.definition import Tool
from .conf import get_tasks_settings
from .models import Task
from .notify import anotify_changed
from .store.errors import aretried_while_down

if TYPE_CHECKING:
    from .store import TaskStore

logger = logging.getLogger("django_mcp.tasks")


Run = Callable[["TaskContext"], Any]


def check_run(run: Any) -> None:
    """Refuse what cannot be a task body before any task is created."""
    if inspect.iscoroutine(run) or inspect.isawaitable(run):
        if inspect.iscoroutine(run):
            run.close()  # never awaited: say so once, here, not as a RuntimeWarning later
        raise TypeError("run must be the task function, not a coroutine: pass run=fn, not run=fn(task)")
    if not callable(run):
        raise TypeError(f"run must be a function taking the task (async def or def), not {type(run).__name__}")


def begin_run(run: Run, task: TaskContext) -> Awaitable[Any]:
    """``run(task)`` to await: an async body's own coroutine, a sync one's call in the task's thread.

    A plain function, so a running task holds no coroutine of ours around its body's; a body that
    cannot even be called raises here, in the caller's ``try``.
    """
    if iscoroutinefunction(run):
        return cast(Awaitable[Any], run(task))
    return _acall_sync(run, task)


async def _acall_sync(run: Run, task: TaskContext) -> Any:
    value = await sync_to_async(run)(task)
    if inspect.isawaitable(value):  # e.g. a lambda returning a coroutine
        value = await value
    return value


def begin_run_within(run: Run, task: RunningTask, tool: Tool) -> Awaitable[Any]:
    """:func:`begin_run`, ended at the tool's ``task_timeout_seconds`` (the task then fails "Task timed
    out"), in the task's span when OpenTelemetry is configured.

    Nothing to bound or trace: :func:`begin_run` itself, no coroutine around the body's.
    """
    limit = tool.extension_options.get("task_timeout_seconds")
    if limit is None and not telemetry.active():
        return begin_run(run, task)

    async def bounded(span: Any) -> Any:
        if limit is None:
            return await begin_run(run, task)
        bound = asyncio.timeout(limit)
        try:
            async with bound:
                return await begin_run(run, task)
        except TimeoutError:
            if not bound.expired():
                raise  # the body's own TimeoutError: an error result, as any exception it raises
            # A sync body's thread cannot be stopped: it runs to its end, and what it returns is dropped.
            raise McpJsonRpcError(INTERNAL_ERROR, f"Task timed out: it ran longer than {limit:g} s") from None

    return telemetry.atraced_task(tool.name, task.id, task.creator_link, bounded, task.traced_by)


class TaskContext:
    """What a task body gets: the task's identity, its cancellation signal, and the client.

    Report progress with :meth:`aupdate` (or :meth:`update` from sync code);
    ask the client with :meth:`arequest_input` (or :meth:`request_input`).
    ``cancelled`` turns true on ``tasks/cancel`` or at shutdown; an async body
    is also cancelled at its next ``await``, a sync one should check it.

    When no task can be created (the client did not declare the extension),
    :func:`~django_mcp.tasks.astart_task` runs the body in the request itself
    with a context whose updates go out as progress notifications and whose
    input requests are asked in the request.
    """

    id: str | None = None
    tool: Tool | None
    arguments: dict[str, Any]

    _cancelled = False
    _signal: asyncio.Event | None = None  # made when first asked for: most tasks never wait on it

    @property
    def cancelled(self) -> bool:
        """Whether the task should stop: ``tasks/cancel``, or the server is shutting down."""
        return self._cancelled

    @property
    def signal(self) -> asyncio.Event:
        """An event set when :attr:`cancelled` turns true (``await task.signal.wait()``)."""
        if self._signal is None:
            self._signal = asyncio.Event()
            if self._cancelled:
                self._signal.set()
        return self._signal

    def mark_cancelled(self) -> None:
        """Turn :attr:`cancelled` true and set :attr:`signal`: what ``tasks/cancel`` and shutdown do.

        The runner calls it; a test of a task body calls it to see the body stop.
        """
        self._cancelled = True
        if self._signal is not None:
            self._signal.set()

    async def aupdate(self, status_message: str) -> None:
        """Set the task's ``statusMessage`` (its progress channel); listeners see it at once."""
        raise NotImplementedError

    def update(self, status_message: str) -> None:
        """:meth:`aupdate` for sync task bodies (call it from the body's thread)."""
        async_to_sync(self.aupdate)(status_message)

    async def arequest_input(self, requests: Mapping[str, InputRequest[Any]]) -> dict[str, Any]:
        """The client's answers to ``requests`` (key → :func:`~django_mcp.elicit` etc.); unvalidated client input."""
        raise NotImplementedError

    def request_input(self, requests: Mapping[str, InputRequest[Any]]) -> dict[str, Any]:
        """:meth:`arequest_input` for sync task bodies (call it from the body's thread)."""
        return async_to_sync(self.arequest_input)(requests)


class InlineTask(TaskContext):
    """A task body run inside its request: updates are progress notifications, input is asked in the request."""

    def __init__(self, request: McpRequest, tool: Tool | None) -> None:
        self.tool = tool
        self.arguments = dict(request.params.get("arguments") or {})
        self._request = request
        self._updates = 0

    async def aupdate(self, status_message: str) -> None:
        self._updates += 1
        self._request.progress(self._updates, message=status_message)

    async def arequest_input(self, requests: Mapping[str, InputRequest[Any]]) -> dict[str, Any]:
        return await self._request.aask(requests)


class RunningTask(TaskContext):
    """A stored task being run by this process."""

    id: str
    tool: Tool

    def __init__(self, store: TaskStore, task: Task, tool: Tool, capabilities: Mapping[str, Any]) -> None:
        self.id = str(task.id)
        self.tool = tool
        self.arguments = dict(task.arguments)
        self._store = store
        self._capabilities = capabilities
        self._issued: set[str] | None = set(task.input_keys) or None  # made when the task first asks
        self._wake: asyncio.Event | None = None  # made when the task first parks
        self.work: asyncio.Future[Any] | None = None
        self.stopping = False
        self.gone = False  # the row is no longer active here (deleted, reaped elsewhere): nothing to record
        self.creator_link: Any = None  # OpenTelemetry: a link to the request that created it
        self.span: Any = None  # OpenTelemetry: the run's span, for its events

    def traced_by(self, span: Any) -> None:
        self.span = span

    async def aupdate(self, status_message: str) -> None:
        try:
            task = await self._store.aset_status_message(self.id, status_message)
        except (OperationalError, InterfaceError) as exc:
            # Progress is not the outcome: dropped (the next update carries the news), the task runs on.
            throttle.log(logger, logging.WARNING, "task-progress", "A task's progress was dropped: %s", exc)
            return
        if task is not None:
            await anotify_changed(task)

    async def arequest_input(self, requests: Mapping[str, InputRequest[Any]]) -> dict[str, Any]:
        """Park the task in ``input_required`` until the client answered every request via ``tasks/update``.

        A key used before in this task goes out under a fresh wire name
        (``confirm``, then ``confirm.2``) so an answer is never attributed to
        the wrong round; an answer that does not fit is asked again the same way.
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
            asked = {wk: r.to_wire() for wk, (_, r) in pending.items()}
            # Through an outage of the database the body waits to ask, as its final write would (it lives on).
            task = await aretried_while_down(
                partial(self._store.apark, self.id, asked), self._retry_for(), f"Task {self.id} asking"
            )
            if task is None:  # no longer active: cancelled, reaped or deleted meanwhile
                raise self._vanished()
            await anotify_changed(task)
            retry: dict[str, tuple[str, InputRequest[Any]]] = {}
            for wire_key, raw in (await self._acollect(list(pending))).items():
                key, request = pending[wire_key]
                try:
                    answers[key] = request.parse(key, raw)
                except McpJsonRpcError:  # an answer that does not fit: ask again, under a fresh key
                    retry[self._fresh_key(key)] = (key, request)
            pending = retry
        return answers

    async def _acollect(self, wire_keys: list[str]) -> dict[str, Any]:
        """Wait until every key is answered: woken by tasks/update (or the maintenance loop), then read the row."""
        collected: dict[str, Any] = {}
        if self._wake is None:
            self._wake = asyncio.Event()
        while len(collected) < len(wire_keys):
            self._wake.clear()
            missing = [k for k in wire_keys if k not in collected]
            taken = await aretried_while_down(
                partial(self._store.atake_answers, self.id, missing),
                self._retry_for(),
                f"Task {self.id} reading",
            )
            if taken is None:
                raise self._vanished()
            collected.update(taken)
            if len(collected) < len(wire_keys):
                await self._wake.wait()
        return collected

    @staticmethod
    def _retry_for() -> float | None:
        return get_tasks_settings().TASK_FINAL_WRITE_RETRY_SECONDS

    def wake(self) -> None:
        if self._wake is not None:  # (not parked yet: its first read of the row sees the answers)
            self._wake.set()

    def _vanished(self) -> asyncio.CancelledError:
        self.gone = True
        return asyncio.CancelledError()

    def _fresh_key(self, key: str) -> str:
        if self._issued is None:
            self._issued = set()
        wire_key, n = key, 1
        while wire_key in self._issued:
            n += 1
            wire_key = f"{key}.{n}"
        self._issued.add(wire_key)
        return wire_key
