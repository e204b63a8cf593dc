"""Running declarative task bodies on a worker fleet through Django's Tasks framework.

The web process commits the row as queued (no node, no lease) and enqueues :data:`run_mcp_task`;
a worker (``manage.py db_worker``, ``manage.py rqworker``) claims the row by compare-and-set,
rebuilds the request from it, and runs the body with the same :class:`RunningTask` machinery
(lease renewal, control channel, outcome rules) on an event loop of its own.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import signal
import threading
import weakref
from typing import TYPE_CHECKING, Any, Protocol

from django.conf import settings as django_settings
from django.db import close_old_connections
from django.urls import get_resolver

from ..conf import get_settings
from ..protocol.errors import internal_error
from ..protocol.jsonrpc import RequestMeta
from ..server.handlers import call_handler
from .conf import get_tasks_settings
from .models import ACTIVE, NodeRole, OwnerKind, Task, TaskStatus
from .notify import anotify_changed
from .request import body_request
from .store.errors import aretried_while_down

if TYPE_CHECKING:
    from ..server.tools.registry import ToolRegistry
    from .runner import TaskRunner
    from .store import TaskStore


class RunsBodies(Protocol):
    """What a fleet worker needs of the server's :class:`~.plugin.McpTasks` to run a task's body."""

    @property
    def store(self) -> TaskStore: ...

    @property
    def runner(self) -> TaskRunner: ...

    tools: ToolRegistry | None


installed: weakref.WeakValueDictionary[str, RunsBodies] = weakref.WeakValueDictionary()
"""Each server's McpTasks by the server's name: a worker has only the task's server name."""

logger = logging.getLogger("django_mcp.tasks")


def tasks_framework() -> Any:
    """The Django Tasks package: ``django.tasks`` (Django 6.0+) or the ``django_tasks`` backport."""
    try:
        return importlib.import_module("django.tasks")
    except ImportError:  # Django 5.2
        return importlib.import_module("django_tasks")


_job: Any = None


def get_run_mcp_task() -> Any:
    """The Django Tasks ``Task`` for :func:`run_mcp_task`, built on first use.

    Built lazily: the ``@task`` decorator looks up a backend, and a project whose ``TASKS`` has no
    ``"default"`` (or that does not use the fleet at all) must still import this module.
    """
    global _job
    if _job is None:
        aliases = list(getattr(django_settings, "TASKS", {}) or {"default": None})
        alias = "default" if "default" in aliases else aliases[0]
        _job = tasks_framework().task(backend=alias)(_run_mcp_task)
    return _job


def __getattr__(name: str) -> Any:
    if name == "run_mcp_task":  # the path a worker imports the job from
        return get_run_mcp_task()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


async def aenqueue(task: Task, backend: str, queue: str, namespace: str, store: TaskStore) -> None:
    """Enqueue the body of ``task`` on ``backend`` (raises when the backend refuses or is down).

    The enqueue and the job id's write run in one store thread, on one connection (:meth:`TaskStore.aenqueue`).
    """

    def enqueue() -> str:
        job = get_run_mcp_task().using(backend=backend, queue_name=queue)
        return str(job.enqueue(str(task.id), namespace).id)

    await store.aenqueue(task.id, enqueue)


def find_plugin(namespace: str) -> RunsBodies:
    """The McpTasks of the server mounted under ``namespace`` (importing the URLconf builds the servers)."""
    get_resolver().url_patterns  # noqa: B018 - imports ROOT_URLCONF, which builds every McpServer
    plugin = installed.get(namespace)
    if plugin is None:
        raise LookupError(f"No McpTasks on a server named {namespace!r} in this project's URLconf")
    return plugin


def _rebuild_request(task: Task, namespace: str) -> Any:
    """The McpRequest the body gets on the worker: arguments, declared capabilities, user (no headers, no secret)."""
    from django.contrib.auth.models import AnonymousUser  # here: a project may leave contrib.auth out

    user = task.user if task.user is not None else AnonymousUser()
    return body_request(
        user=user,
        # A token principal is never stored: the body sees the user, or no principal at all.
        auth=task.user if task.owner_kind == OwnerKind.USER else None,
        tool=task.tool,
        arguments=dict(task.arguments),
        meta=RequestMeta.model_validate(task.request_meta),
        namespace=namespace,
    )


async def arun(task_id: str, namespace: str) -> str:
    """Claim the queued row, run the body under the runner, record the outcome. Returns what happened."""
    plugin = find_plugin(namespace)
    runner = plugin.runner
    runner.role = NodeRole.WORKER
    settings = get_tasks_settings()
    await runner.acontrol_ready()  # listening before the row names this runner
    runner.expect(task_id)
    try:
        return await _aclaim_and_run(task_id, namespace, plugin, settings.TASK_LEASE_SECONDS)
    finally:
        runner.unexpect(task_id)  # a no-op once it started
        await _arecord_seen(runner)  # the worker's "last seen": its maintenance runs only during a job


async def _arecord_seen(runner: TaskRunner) -> None:
    try:
        await runner.arecord_node()
    except Exception as exc:  # the monitor's figure only: never the job's outcome
        logger.warning("Worker %s could not record itself for the task monitor: %s", runner.node, exc)


async def _aclaim_and_run(task_id: str, namespace: str, plugin: RunsBodies, lease_seconds: float) -> str:
    store, runner = plugin.store, plugin.runner
    # A broker (RQ, Celery) hands the job over once: a claim lost to a database outage would leave the task
    # queued until its queue timeout. Wait the outage out, up to that timeout (past it the web fails the task).
    claimed = await aretried_while_down(
        lambda: store.aclaim(task_id, runner.node, lease_seconds, "Running on a worker"),
        get_tasks_settings().TASK_QUEUED_TIMEOUT_SECONDS,
        f"Task {task_id}: claiming it",
    )
    if claimed is None:
        row = await store.areload(task_id)
        if row is not None and row.status in ACTIVE and not row.node and row.cancel_requested:
            done = await store.afinish(task_id, TaskStatus.CANCELLED, message="Cancelled before it started")
            if done is not None:
                await anotify_changed(done)
        return f"not run: {row.status if row is not None else 'deleted'}"
    await anotify_changed(claimed)
    task = await store.aload_with_user(task_id)
    assert task is not None and plugin.tools is not None
    tool = plugin.tools.get(task.tool)
    try:
        if tool is None:
            raise LookupError(f"the worker has no tool {task.tool!r}")
        request = _rebuild_request(task, namespace)
        kwargs = tool.validate_arguments(task.arguments)
    except Exception as exc:  # a worker deployed out of step with the web processes
        logger.exception("Task %s: the worker could not start its body", task_id)
        message = f"Task failed: the worker could not start it ({type(exc).__name__})"
        error = internal_error(message).to_error()
        done = await store.afinish(task_id, TaskStatus.FAILED, error=error, message=message)
        if done is not None:
            await anotify_changed(done)
        return "not started"

    async def body(context: Any) -> Any:
        return await call_handler(tool.handler, request.run_as(context), **kwargs)

    supervisor = runner.start(task, tool, body, request.client_capabilities)
    with _Graceful(runner):
        await supervisor
    row = await store.areload(task_id)
    return row.status if row is not None else "deleted"


class _Graceful:
    """While the body runs: SIGTERM/SIGINT start the grace period (then the task fails "interrupted").

    The worker's own handler is chained on the first signal (db_worker stops taking jobs after this
    one; rq's SimpleWorker likewise); a second signal ends the grace at once. Restored afterwards.
    """

    SIGNALS = (signal.SIGTERM, signal.SIGINT)

    def __init__(self, runner: Any) -> None:
        self.runner = runner
        self.previous: dict[int, Any] = {}
        self.count = 0
        self.stopping: asyncio.Task[None] | None = None

    def __enter__(self) -> _Graceful:
        if threading.current_thread() is not threading.main_thread():
            return self  # signals are the main thread's; then the worker's own handling applies
        self.loop = asyncio.get_running_loop()
        for sig in self.SIGNALS:
            self.previous[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, *exc: Any) -> None:
        for sig, previous in self.previous.items():
            if signal.getsignal(sig) == self._handle:  # the worker may have replaced it (rq's force-stop)
                signal.signal(sig, previous)

    def _handle(self, signum: int, frame: Any) -> None:
        self.count += 1
        grace = 0.0 if self.count > 1 else get_settings().SHUTDOWN_GRACE_SECONDS
        if self.count == 1:
            previous = self.previous.get(signum)
            if callable(previous):
                previous(signum, frame)  # db_worker: stop after this job (it does not exit mid-job)
        logger.warning("Worker got signal %s: %.1f s of grace for the running task", signum, grace)
        self.loop.call_soon_threadsafe(self._stop, grace)

    def _stop(self, grace: float) -> None:
        if self.stopping is not None and grace > 0:
            return
        self.stopping = self.loop.create_task(self.runner.astop(grace))


def _execute(task_id: str, namespace: str) -> str:
    close_old_connections()
    try:
        return asyncio.run(arun(task_id, namespace))
    finally:
        close_old_connections()


def _run_mcp_task(task_id: str, namespace: str) -> str:
    """The Django Tasks job: run the MCP task ``task_id`` of the server ``namespace`` on this worker."""
    return _execute(task_id, namespace)


# The job's path is django_mcp.tasks.fleet.run_mcp_task: the module's __getattr__ answers it with the Task.
_run_mcp_task.__name__ = _run_mcp_task.__qualname__ = "run_mcp_task"
