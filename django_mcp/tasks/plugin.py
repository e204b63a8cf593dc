"""``McpTasks``: the tasks extension (``io.modelcontextprotocol/tasks``) as a server plugin; how tools create tasks."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from asgiref.sync import async_to_sync, markcoroutinefunction
from django.apps import apps
from django.core.exceptions import ImproperlyConfigured
from pydantic import BaseModel

from ..protocol.errors import INTERNAL_ERROR, McpJsonRpcError, invalid_params, missing_capability
from ..protocol.jsonrpc import notification
from ..server import telemetry
from ..server.caller import principal_digest
from ..server.extensions import ExtensionMethod, ExtensionPlugin, ExtensionResult, ListenSubscription, ProceedToolCall
from ..server.lifecycle import shutting_down
from ..server.mrtr import ElicitAnswer, RootsAnswer, SamplingAnswer
from ..server.params import parse_params
from ..server.request import McpRequest, needs_asgi
from . import gauges  # noqa: F401  (declares the tasks' OpenTelemetry gauges)
from .cancelling import acancel
from .checks import check_plugin
from .conf import get_tasks_settings
from .context import InlineTask, Run, TaskContext, begin_run, check_run
from .fleet import aenqueue, installed
from .models import ACTIVE, Task, creator_fields
from .monitoring import feed
from .notify import anotify_changed, task_group
from .options import (
    check_backend_alias,
    check_flag,
    check_status_message,
    check_task_support,
    check_timeout,
    refuse_unstorable,
)
from .params import TaskIdParams, TaskIdsFilter, UpdateParams
from .request import CallInRequest, TaskRequest, current_call, current_task, detached, shared_meta
from .runner import OWNER_GONE, TaskRunner
from .signals import task_created
from .store import TaskStore
from .store.database import new_task_id
from .store.errors import TaskLimitReached
from .wire import DETAILED_FIELDS, EXTENSION_ID, create_task_result, detailed_task

if TYPE_CHECKING:
    from django.core.checks import CheckMessage

    from ..server.tools.definition import Tool
    from ..server.tools.registry import ToolRegistry

logger = logging.getLogger("django_mcp.tasks")

# What tasks/get reads besides the expiry every read checks: the wire object and the lease its reaping
# checks. The other columns (arguments, answers, request metadata: JSON each) stay in the database.
_GET_FIELDS = (*DETAILED_FIELDS, "lease_expires_at")

_ANSWER_TYPES: dict[str, type[BaseModel]] = {
    "elicitation/create": ElicitAnswer,
    "sampling/createMessage": SamplingAnswer,
    "roots/list": RootsAnswer,
}
_REQUIRED: dict[str, Any] = {"extensions": {EXTENSION_ID: {}}}
_A_TENTH: Any = object()  # McpTasks(max_tasks_per_owner=) not given: default_tasks_per_owner(max_tasks)


def default_tasks_per_owner(max_tasks: int) -> int:
    """The per-caller cap when none is given: a tenth of ``max_tasks``, at least 10 (at most ``max_tasks``),
    so that one caller cannot fill the server alone."""
    return min(max_tasks, max(10, max_tasks // 10))


class McpTasks(ExtensionPlugin):
    """The tasks extension. Installing it in ``McpServer(extension_plugins=[...])`` is the whole switch.

    ``max_tasks`` tasks are retained at once by this server, and at most
    ``max_tasks_per_owner`` by any one caller (default: a tenth of ``max_tasks``,
    at least 10; None: no per-caller cap; an anonymous caller is counted by its
    client address), so one caller cannot starve the rest (creation past a cap
    is refused, nothing is evicted); each lives ``ttl_seconds`` from creation (None: until
    deleted); clients are told to poll every ``poll_interval_seconds``.
    ``bind(request)`` names who may see a task (default: the authenticated
    principal, else the Django user, else anonymous). ``enabled(request)``
    switches the extension per request. Both get the :class:`~django_mcp.McpRequest`.

    Tools opt in with ``@tool(task_support="optional" | "required")``: when the
    client declared the extension, the tool's body runs as the task
    (``request.task`` is its :class:`TaskContext`); otherwise it runs in the
    request (and a ``"required"`` tool is refused). With
    ``run_body_as_task=False`` the body runs in the request and decides itself
    with :func:`astart_task`.
    """

    identifier = EXTENSION_ID
    listen_filter_keys = ("taskIds",)
    tool_options = {
        "task_support": check_task_support,
        "run_body_as_task": check_flag,
        "task_backend": check_backend_alias,
        "task_status_message": check_status_message,
        "task_timeout_seconds": check_timeout,
    }

    def __init__(
        self,
        *,
        max_tasks: int = 1000,
        max_tasks_per_owner: int | None = _A_TENTH,
        ttl_seconds: float | None = 3600,
        poll_interval_seconds: float = 1.0,
        bind: Callable[[McpRequest], Any] | None = None,
        enabled: Callable[[McpRequest], bool] | None = None,
        task_backend: str | None = None,
        task_queue: str = "default",
    ) -> None:
        if not apps.is_installed("django_mcp"):
            raise ImproperlyConfigured(
                "django_mcp.E007: McpTasks stores tasks in the django_mcp app: add 'django_mcp' to INSTALLED_APPS"
            )
        if not isinstance(max_tasks, int) or isinstance(max_tasks, bool) or max_tasks < 1:
            raise ImproperlyConfigured("McpTasks(max_tasks=...) must be a positive integer")
        if max_tasks_per_owner is _A_TENTH:
            max_tasks_per_owner = default_tasks_per_owner(max_tasks)
        if max_tasks_per_owner is not None and (
            not isinstance(max_tasks_per_owner, int) or isinstance(max_tasks_per_owner, bool) or max_tasks_per_owner < 1
        ):
            raise ImproperlyConfigured("McpTasks(max_tasks_per_owner=...) must be a positive integer or None")
        if ttl_seconds is not None and (not isinstance(ttl_seconds, int | float) or ttl_seconds <= 0):
            raise ImproperlyConfigured("McpTasks(ttl_seconds=...) must be a positive number of seconds or None")
        if not isinstance(poll_interval_seconds, int | float) or poll_interval_seconds <= 0:
            raise ImproperlyConfigured("McpTasks(poll_interval_seconds=...) must be a positive number of seconds")
        self.max_tasks = max_tasks
        self.max_tasks_per_owner = max_tasks_per_owner
        self.ttl_seconds = ttl_seconds
        self.poll_interval_seconds = poll_interval_seconds
        self.task_backend = task_backend
        """The Django Tasks backend alias declarative task bodies are enqueued on (None: run in this process)."""
        self.task_queue = task_queue
        self._bind = bind
        self._enabled = enabled
        self._store: TaskStore | None = None
        self._runner: TaskRunner | None = None

    def install(self, namespace: str, tools: ToolRegistry) -> None:
        super().install(namespace, tools)
        if self._runner is not None:
            self._runner.server = namespace
        installed[namespace] = self  # for a fleet worker, which has a task's server name only

    @property
    def store(self) -> TaskStore:
        """This plugin's door to the ORM (its threads are made on first use)."""
        if self._store is None:
            self._store = TaskStore(get_tasks_settings().TASK_STORE_THREADS)
        return self._store

    @property
    def runner(self) -> TaskRunner:
        """The tasks this plugin runs in this process."""
        if self._runner is None:
            self._runner = TaskRunner(self.store, self.namespace)
        return self._runner

    # -- the extension interface -----------------------------------------------------

    def enabled(self, request: McpRequest) -> bool:
        return self._enabled(request) if self._enabled is not None else True

    def methods(self) -> Mapping[str, ExtensionMethod]:
        return {
            "tasks/get": ExtensionMethod(self._get, TaskIdParams, name_param="taskId"),
            "tasks/update": ExtensionMethod(self._update, UpdateParams, name_param="taskId"),
            "tasks/cancel": ExtensionMethod(self._cancel, TaskIdParams, name_param="taskId"),
        }

    def decorate_tool(self, tool: Tool, wire: dict[str, Any]) -> None:
        wire["execution"] = {"taskSupport": tool.extension_options.get("task_support", "forbidden")}

    async def call_tool(self, request: McpRequest, tool: Tool, proceed: ProceedToolCall) -> Any:
        support = tool.extension_options.get("task_support", "forbidden")
        declared = request.declares_extension(EXTENSION_ID)
        if support == "required" and not declared:
            raise missing_capability(_REQUIRED, f"Tool {tool.name!r} runs only as a task: declare {EXTENSION_ID}")
        if support == "forbidden":
            return await proceed(request)
        as_body = tool.extension_options.get("run_body_as_task", True)
        backend = tool.extension_options.get("task_backend", self.task_backend) if as_body else None
        # A body run in this process outlives the response: not under WSGI. The fleet's workers run theirs.
        creates = declared and bool(backend or request.served_by_asgi)
        if declared and not creates and support == "required":
            fleet = " (or its task_backend, to run it on the worker fleet)" if as_body else ""
            raise needs_asgi(f"Tool {tool.name!r} runs only as a task, in the web process: that{fleet}")
        if creates and as_body:
            # The body keeps only what it needs of the request: not the HTTP request, which is over.
            body_request = detached(request)

            # A plain function handing back the tool's awaitable: a running task keeps no coroutine of
            # ours around the tool's.
            @markcoroutinefunction
            def body(task: TaskContext) -> Awaitable[Any]:
                return proceed(body_request.run_as(task))

            status_message = tool.extension_options.get("task_status_message", "")
            return await self.acreate(request, tool, body, status_message, backend=backend)
        return await self._acall_in_request(request, tool, proceed, served=creates)

    async def call_tool_unserved(self, request: McpRequest, tool: Tool, proceed: ProceedToolCall) -> Any:
        if tool.extension_options.get("task_support") == "required":
            where = (
                "a client speaking MCP 2026-07-28 that declares it: this client speaks "
                f"{request.protocol_version}, which has no tasks"
                if request.era != "modern"
                else "a request for which the extension is enabled"
            )
            raise missing_capability(
                _REQUIRED, f"Tool {tool.name!r} runs only as a task: it needs {EXTENSION_ID} from {where}"
            )
        return await self._acall_in_request(request, tool, proceed, served=False)

    async def _acall_in_request(self, request: McpRequest, tool: Tool, proceed: ProceedToolCall, served: bool) -> Any:
        """The tool's body in the request, without a task: a task tool's ``request.task`` is None.

        ``served``: whether :func:`astart_task` may create a task for this call.
        """
        if tool.extension_options.get("task_support", "forbidden") == "forbidden":
            return await proceed(request)
        token = current_call.set(CallInRequest(self, request, tool, served))
        try:
            return await proceed(TaskRequest.of(request, None))
        finally:
            current_call.reset(token)

    async def subscribe(self, request: McpRequest, notifications: Mapping[str, Any]) -> ListenSubscription:
        if not request.declares_extension(EXTENSION_ID):
            raise missing_capability(_REQUIRED, f"taskIds needs the {EXTENSION_ID} extension on this request")
        ids = parse_params(TaskIdsFilter, "subscriptions/listen", dict(notifications)).taskIds
        owner = self.owner_of(request)
        visible = [str(t.id) for t in await self.store.awatch_many(ids, owner)]

        async def snapshot() -> list[dict[str, Any]]:
            tasks = [await self._areap_if_orphaned(t) for t in await self.store.avisible_many(visible, owner)]
            return [notification("notifications/tasks", detailed_task(t)) for t in tasks]

        return ListenSubscription({"taskIds": visible}, tuple(task_group(i) for i in visible), snapshot)

    def check(self, tools: list[Tool]) -> list[CheckMessage]:
        return check_plugin(self, tools)

    async def startup(self) -> None:
        # Dead owners are found by this loop even when no client touches their tasks.
        self.runner.ensure_maintenance()

    async def shutdown(self, grace_seconds: float) -> None:
        """Running tasks get ``grace_seconds`` (their signal is set), then what is left fails."""
        if self._runner is not None:
            await self._runner.astop(grace_seconds)

    # -- binding ---------------------------------------------------------------------------

    def counted_as(self, request: McpRequest) -> str:
        """Whom ``max_tasks_per_owner`` counts a task of ``request`` against: its owner, or for an
        anonymous caller (with the default binding) a digest of its client address."""
        if self._bind is not None or request.principal_key != "anonymous":
            return self.owner_of(request)
        return "sha256:" + principal_digest(self.namespace, request.limit_key)

    def owner_of(self, request: McpRequest) -> str:
        """The binding key for tasks created or read by ``request``: a digest, scoped to the server.

        Hashed so that a principal that is a secret (a bearer token) is never stored or shown.
        """
        key = str(self._bind(request)) if self._bind is not None else request.principal_key
        return "sha256:" + principal_digest(self.namespace, key)

    async def _avisible(self, request: McpRequest, task_id: str, only: tuple[str, ...] | None = None) -> Task:
        task = await self.store.avisible(task_id, self.owner_of(request), only)
        if task is None:
            # Unknown, expired and someone else's all read the same.
            raise invalid_params(f"Unknown task: {task_id}", {"taskId": task_id})
        return await self._areap_if_orphaned(task)

    async def _areap_if_orphaned(self, task: Task) -> Task:
        """Fail an active task whose lease lapsed (its process died) as soon as someone touches it."""
        if (
            task.status in ACTIVE
            and task.lease_lapsed()
            and not self.runner.running_here(str(task.id))
            and self.runner.may_reap()
        ):
            reaped = await self.store.afail_if_owner_gone(task, OWNER_GONE)
            if reaped.status != task.status:
                await anotify_changed(reaped)
            return reaped
        return task

    # -- methods -------------------------------------------------------------------------------

    async def _get(self, request: McpRequest, params: TaskIdParams) -> dict[str, Any]:
        return detailed_task(await self._avisible(request, params.taskId, _GET_FIELDS))

    async def _update(self, request: McpRequest, params: UpdateParams) -> dict[str, Any]:
        task = await self._avisible(request, params.taskId)
        responses = params.inputResponses
        refuse_unstorable(responses, "inputResponses")
        for key, raw in responses.items():
            outstanding = task.input_requests.get(key)
            answer_type = _ANSWER_TYPES.get(outstanding.get("method", "")) if isinstance(outstanding, dict) else None
            if answer_type is not None:
                try:
                    answer_type.model_validate(raw)
                except ValueError as exc:
                    raise invalid_params(f"Invalid input response {key!r}: {exc}", {"inputResponse": key}) from None
        updated, accepted = await self.store.aanswer(task.id, self.owner_of(request), responses)
        if updated is not None and accepted:
            await anotify_changed(updated)
            await self.runner.adeliver(updated, "input")
        return {}

    async def _cancel(self, request: McpRequest, params: TaskIdParams) -> dict[str, Any]:
        task = await self._avisible(request, params.taskId)
        await acancel(self.store, task, lambda flagged: self.runner.adeliver(flagged, "cancel"))
        return {}

    # -- creation -------------------------------------------------------------------------------

    async def acreate(
        self, request: McpRequest, tool: Tool, run: Run, status_message: str = "", backend: str | None = None
    ) -> ExtensionResult:
        """Commit a task for this ``tools/call``, start ``run`` on it, and return the handle to answer with.

        With ``backend`` (a ``TASKS`` alias) the row is committed as queued (no node, no lease) and the
        tool's body is enqueued there instead: a worker claims the row and runs the body (``run`` is unused).
        """
        if shutting_down():
            raise McpJsonRpcError(
                INTERNAL_ERROR, "The server is shutting down: retry on another worker", http_status=503
            )
        settings = get_tasks_settings()
        arguments = request.params.get("arguments") or {}
        refuse_unstorable(arguments, "arguments")
        # What a worker rebuilds the request from; a task run here has its request.
        request_meta = (
            request.meta.model_dump(by_alias=True, exclude_none=True, exclude={"progress_token"}) if backend else None
        )
        refuse_unstorable(request_meta, "the request's _meta (client capabilities and info)")
        task_id = new_task_id()
        if not backend:  # this runner runs it: listening for its control before the row exists
            await self.runner.acontrol_ready()
            self.runner.expect(str(task_id))
        try:
            task = await self.store.acreate(
                task_id=task_id,
                tool=tool.name,
                owner=self.owner_of(request),
                scope=self.namespace,
                arguments=arguments,
                status_message=status_message or ("Queued for a worker" if backend else ""),
                ttl_ms=round(self.ttl_seconds * 1000) if self.ttl_seconds is not None else None,
                poll_interval_ms=round(self.poll_interval_seconds * 1000),
                max_tasks=self.max_tasks,
                max_tasks_per_owner=self.max_tasks_per_owner,
                node="" if backend else self.runner.node,
                lease_seconds=None if backend else settings.TASK_LEASE_SECONDS,
                request_meta=request_meta,
                backend=backend or "",
                counted_as=self.counted_as(request),
                traceparent=telemetry.current_traceparent(),
                **creator_fields(request.caller),
            )
        except TaskLimitReached as reached:
            self.runner.unexpect(str(task_id))
            if reached.which == "owner":
                message = f"Task limit reached: you may have at most {reached.limit} tasks here; let some finish"
                raise McpJsonRpcError(INTERNAL_ERROR, message, {"maxTasksPerOwner": reached.limit}) from None
            raise McpJsonRpcError(
                INTERNAL_ERROR,
                f"Task limit reached: this server retains at most {reached.limit} tasks; try again later",
                {"maxTasks": reached.limit},
            ) from None
        except BaseException:
            self.runner.unexpect(str(task_id))
            raise
        if backend:
            try:
                await aenqueue(task, backend, self.task_queue, self.namespace, self.store)
            except Exception as exc:
                logger.exception("Task %s: could not be enqueued on backend %r", task.id, backend)
                await self.store.aforget(task.id)  # the client never saw it: nothing left in working
                raise McpJsonRpcError(
                    INTERNAL_ERROR,
                    f"Could not queue the task for a worker ({type(exc).__name__}); nothing was started: retry later",
                    {"taskBackend": backend},
                    http_status=503,
                ) from None
            request.finish()
            await _acreated(task, request)
            return ExtensionResult(create_task_result(task))
        request.finish()  # progress and log of this request never go out once it is a task
        self.runner.start(task, tool, run, shared_meta(request.meta).client_capabilities)
        await _acreated(task, request)
        return ExtensionResult(create_task_result(task))


async def _acreated(task: Task, request: McpRequest) -> None:
    await feed.aoffer(task, set(), created=True)  # the admin's task monitors, while one is open
    if task_created.receivers:
        await task_created.asend(sender=Task, task=task, request=request)


def can_create_task(request: McpRequest) -> bool:
    """Whether :func:`astart_task` answers this request with a task (else it runs the body in the request).

    True inside a task body, and for a ``tools/call`` whose request declared
    the extension on a server with :class:`McpTasks` installed and enabled.
    """
    if current_task(request) is not None:
        return True
    call = current_call.get()
    return call is not None and call.served and request.declares_extension(EXTENSION_ID)


async def astart_task(request: McpRequest, *, run: Run, status_message: str = "") -> Any:
    """Run ``run(task)`` as a task and return the handle to answer the ``tools/call`` with.

    ``run`` is ``async def run(task)`` or a plain ``def run(task)`` (run in a
    thread); it returns the tool result (anything a tool handler may return),
    raises ``McpJsonRpcError`` to fail the task, or any other exception for an
    ``isError`` result. The task row is committed before this returns, so the
    client can poll it at once.

    Where no task can be created (the client did not declare the extension,
    the tool is not marked ``task_support``, the plugin is not enabled for the
    request) ``run`` runs right here with an inline :class:`TaskContext` and its
    result is returned; inside a body that already runs as a task it runs on
    that task.
    """
    check_run(run)
    task = current_task(request)
    if task is not None:
        if status_message:
            await task.aupdate(status_message)
        return await begin_run(run, task)
    call = current_call.get()
    if call is None or not call.served or not request.declares_extension(EXTENSION_ID):
        return await begin_run(run, InlineTask(request, call.tool if call is not None else None))
    return await call.plugin.acreate(request, call.tool, run, status_message)


def start_task(request: McpRequest, *, run: Run, status_message: str = "") -> Any:
    """:func:`astart_task` for sync tool handlers (call it from the handler's thread)."""
    return async_to_sync(astart_task)(request, run=run, status_message=status_message)
