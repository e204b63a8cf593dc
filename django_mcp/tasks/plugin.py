"""``McpTasks``: the tasks extension (``io.modelcontextprotocol/tasks``) as a server plugin."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from django.core.exceptions import ImproperlyConfigured
from pydantic import BaseModel

from ..conf import get_settings
from ..protocol.errors import INTERNAL_ERROR, McpJsonRpcError, invalid_params, missing_capability
from ..protocol.jsonrpc import notification
from ..server.context import McpRequest
from ..server.extensions import ExtensionMethod, ExtensionPlugin, ListenSubscription
from ..server.lifecycle import on_shutdown, shutting_down
from ..server.mrtr import ElicitAnswer, RootsAnswer, SamplingAnswer
from ..server.results import RawResult
from . import runner, store
from .models import ACTIVE, Task
from .wire import EXTENSION_ID, create_task_result, detailed_task

if TYPE_CHECKING:
    from django.http import HttpRequest

    from ..server.tools import Tool

_ANSWER_TYPES: dict[str, type[BaseModel]] = {
    "elicitation/create": ElicitAnswer,
    "sampling/createMessage": SamplingAnswer,
    "roots/list": RootsAnswer,
}
MAX_WATCHED_TASKS = 1000
_REQUIRED: dict[str, Any] = {"extensions": {EXTENSION_ID: {}}}


class TasksUnavailable(RuntimeError):  # noqa: N818
    """``mcp_task`` was called where no task can be created (see the message for why)."""


class McpTasks(ExtensionPlugin):
    """The tasks extension. Installing it in ``McpServer(extension_plugins=[...])`` is the whole switch.

    ``max`` tasks are retained at once (creation past it is refused, nothing
    is evicted); each lives ``ttl_ms`` from creation (None: until deleted);
    clients are told to poll every ``poll_interval_ms``. ``bind(request)``
    names who may see a task (default: the authenticated principal, else the
    Django user, else anonymous). ``enabled(request)`` switches the extension
    per request.
    """

    identifier = EXTENSION_ID
    listen_filter_keys = ("taskIds",)

    def __init__(
        self,
        *,
        max: int = 1000,  # noqa: A002 - the option's documented name
        ttl_ms: int | None = 3_600_000,
        poll_interval_ms: int = 1000,
        bind: Callable[[Any], Any] | None = None,
        enabled: Callable[[HttpRequest], bool] | None = None,
    ) -> None:
        if not isinstance(max, int) or max < 1:
            raise ImproperlyConfigured("McpTasks(max=...) must be a positive integer")
        if ttl_ms is not None and (not isinstance(ttl_ms, int) or ttl_ms < 1):
            raise ImproperlyConfigured("McpTasks(ttl_ms=...) must be a positive integer or None")
        if not isinstance(poll_interval_ms, int) or poll_interval_ms < 1:
            raise ImproperlyConfigured("McpTasks(poll_interval_ms=...) must be a positive integer")
        self.max = max
        self.ttl_ms = ttl_ms
        self.poll_interval_ms = poll_interval_ms
        self._bind = bind
        self._enabled = enabled

    # -- the extension interface -----------------------------------------------------

    def enabled(self, request: HttpRequest) -> bool:
        return self._enabled(request) if self._enabled is not None else True

    def methods(self) -> Mapping[str, ExtensionMethod]:
        return {
            "tasks/get": ExtensionMethod(self._get, name_param="taskId"),
            "tasks/update": ExtensionMethod(self._update, name_param="taskId"),
            "tasks/cancel": ExtensionMethod(self._cancel, name_param="taskId"),
        }

    def check_tool_call(self, request: McpRequest, tool: Tool) -> None:
        if tool.task_support == "required" and not request.declares_extension(EXTENSION_ID):
            raise missing_capability(_REQUIRED, f"Tool {tool.name!r} runs only as a task: declare {EXTENSION_ID}")

    async def subscribe(self, request: McpRequest, notifications: dict[str, Any]) -> ListenSubscription:
        if not request.declares_extension(EXTENSION_ID):
            raise missing_capability(_REQUIRED, f"taskIds needs the {EXTENSION_ID} extension on this request")
        ids = notifications.get("taskIds")
        if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
            raise invalid_params("Invalid params: notifications.taskIds must be a list of task ids")
        if len(ids) > MAX_WATCHED_TASKS:
            raise invalid_params(f"Invalid params: at most {MAX_WATCHED_TASKS} taskIds per listen stream")
        owner = self.owner_of(request)
        visible = [str(t.id) for t in await store.visible_many(ids, owner)]

        async def snapshot() -> list[dict[str, Any]]:
            tasks = [await self._reap_if_orphaned(t) for t in await store.visible_many(visible, owner)]
            return [notification("notifications/tasks", detailed_task(t)) for t in tasks]

        return ListenSubscription({"taskIds": visible}, tuple(runner.task_group(i) for i in visible), snapshot)

    # -- binding ---------------------------------------------------------------------------

    def owner_of(self, request: McpRequest) -> str:
        """The binding key for tasks created or read by ``request``: a digest, scoped to the server.

        Hashed so that a principal that is a secret (a bearer token) is never stored or shown.
        """
        key = str(self._bind(request)) if self._bind is not None else request.principal_key
        scope = request.server.urls_namespace if request.server is not None else ""
        return "sha256:" + hashlib.sha256(f"{scope}\0{key}".encode()).hexdigest()

    async def _visible(self, request: McpRequest) -> Task:
        task_id = request.params.get("taskId")
        if not isinstance(task_id, str):
            raise invalid_params("Invalid params: taskId must be a string")
        task = await store.visible(task_id, self.owner_of(request))
        if task is None:
            # Unknown, expired and someone else's all read the same.
            raise invalid_params(f"Unknown task: {task_id}", {"taskId": task_id})
        return await self._reap_if_orphaned(task)

    async def _reap_if_orphaned(self, task: Task) -> Task:
        """Fail an active task whose lease lapsed (its process died): detected lazily, by whoever touches it."""
        if task.status in ACTIVE and store.lease_lapsed(task) and not runner.running_here(str(task.id)):
            reaped = await store.fail_if_owner_gone(task, runner.OWNER_GONE)
            if reaped.status != task.status:
                await runner.publish(reaped)
            return reaped
        return task

    # -- methods -------------------------------------------------------------------------------

    async def _get(self, request: McpRequest) -> dict[str, Any]:
        return detailed_task(await self._visible(request))

    async def _update(self, request: McpRequest) -> dict[str, Any]:
        responses = request.params.get("inputResponses")
        if not isinstance(responses, dict):
            raise invalid_params("Invalid params: tasks/update needs an inputResponses object")
        task = await self._visible(request)
        for key, raw in responses.items():
            outstanding = task.input_requests.get(key)
            answer_type = _ANSWER_TYPES.get(outstanding.get("method", "")) if isinstance(outstanding, dict) else None
            if answer_type is not None:
                try:
                    answer_type.model_validate(raw)
                except ValueError as exc:
                    raise invalid_params(f"Invalid input response {key!r}: {exc}", {"inputResponse": key}) from None
        updated, accepted = await store.answer(task.id, self.owner_of(request), responses)
        if updated is not None and accepted:
            await runner.publish(updated)
            await runner.deliver(str(task.id), "input")
        return {}

    async def _cancel(self, request: McpRequest) -> dict[str, Any]:
        task = await self._visible(request)
        await cancel_task(task)
        return {}


async def cancel_task(task: Task) -> None:
    """Request cancellation of a task (``tasks/cancel`` and the admin action both come here).

    The flag is set in the database (the owner also finds it there), and the
    owning process is told through the Channels layer. A terminal task is left as it is.
    """
    if task.status not in ACTIVE:
        return
    flagged = await store.request_cancel(task.id, None)
    if flagged is not None and flagged.status in ACTIVE:
        await runner.deliver(str(task.id), "cancel")


@on_shutdown
async def _stop_running_tasks(grace_seconds: float) -> None:
    """At shutdown: running tasks get ``grace_seconds`` (their signal is set), then what is left fails."""
    await runner.stop_all(grace_seconds)


def _plugin_for(request: McpRequest) -> McpTasks:
    server = request.server
    plugin = server.plugin(EXTENSION_ID) if server is not None else None
    if not isinstance(plugin, McpTasks):
        raise TasksUnavailable(
            "The tasks extension is not installed: add McpTasks() to McpServer(extension_plugins=...)"
        )
    if request.method != "tools/call":
        raise TasksUnavailable(f"Tasks can only be created by tools/call, not {request.method}")
    if not plugin.enabled(request.http_request):
        raise TasksUnavailable("The tasks extension is disabled for this request")
    if not request.declares_extension(EXTENSION_ID):
        raise TasksUnavailable(f"The client did not declare {EXTENSION_ID} on this request")
    return plugin


def can_create_task(request: McpRequest) -> bool:
    """Whether :func:`mcp_task` may answer this request with a task.

    True for a ``tools/call`` whose request declared the extension, on a
    server with :class:`McpTasks` installed and enabled for the request.
    """
    try:
        _plugin_for(request)
    except TasksUnavailable:
        return False
    return True


async def mcp_task(request: McpRequest, *, run: runner.Run, status_message: str = "") -> RawResult:
    """Start ``run(task)`` in the background and return the task handle to answer the ``tools/call`` with.

    The task row is committed before this returns, so the client can poll it
    at once. ``run`` returns the tool result (anything a tool handler may
    return), raises ``McpJsonRpcError`` to fail the task, or any other
    exception for an ``isError`` result. Raises :class:`TasksUnavailable`
    where :func:`can_create_task` is false.
    """
    plugin = _plugin_for(request)
    if shutting_down():
        raise McpJsonRpcError(INTERNAL_ERROR, "The server is shutting down: retry on another worker", http_status=503)
    tool = request.server.tools.get(request.params["name"]) if request.server is not None else None
    assert tool is not None  # tools/call dispatch found it
    settings = get_settings()
    try:
        task = await store.create(
            tool=tool.name,
            owner=plugin.owner_of(request),
            arguments=request.params.get("arguments") or {},
            status_message=status_message,
            ttl_ms=plugin.ttl_ms,
            poll_interval_ms=plugin.poll_interval_ms,
            max_tasks=plugin.max,
            node=runner.NODE,
            lease_seconds=settings.TASK_LEASE_SECONDS,
        )
    except store.TaskLimitReached:
        raise McpJsonRpcError(
            INTERNAL_ERROR,
            f"Task limit reached: this server retains at most {plugin.max} tasks; try again later",
            {"maxTasks": plugin.max},
        ) from None
    request.stop_notifications()  # progress and log never go out for a task
    runner.start(task, tool, run, request.client_capabilities)
    return RawResult(create_task_result(task))
