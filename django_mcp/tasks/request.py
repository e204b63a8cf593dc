"""The request a task tool's body gets (:class:`TaskRequest`), and the tool call a task may be created for."""

from __future__ import annotations

import contextvars
import functools
import json
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Protocol

from django.http import HttpRequest, QueryDict

from ..protocol.jsonrpc import RequestMeta
from ..server.request import McpRequest
from .context import TaskContext

if TYPE_CHECKING:
    from ..server.extensions import ExtensionResult
    from ..server.tools.definition import Tool
    from .context import Run


class TaskRequest(McpRequest):
    """The request a task tool's body gets: an :class:`~django_mcp.McpRequest` plus :attr:`task`.

    ``task`` is the :class:`TaskContext` when the body runs as a task (it
    then asks the client through the task: ``await request.aask(...)`` parks
    it in ``input_required``), and None when it runs in the request.
    """

    task: TaskContext | None = None

    @classmethod
    def of(cls, request: McpRequest, task: TaskContext | None) -> TaskRequest:
        """``request`` as the request of a body: run as ``task``, or in the request when it is None."""
        wrapped = cls.__new__(cls)
        wrapped.__dict__.update(request.__dict__)
        return wrapped.run_as(task) if task is not None else wrapped

    def run_as(self, task: TaskContext) -> TaskRequest:
        """This request, as the request of ``task``'s body: it asks the client through the task."""
        self.task = task
        self._sink = None  # the response is gone: progress travels as the task's statusMessage
        self._asker = task.arequest_input
        return self


_NOTHING_SENT = QueryDict()  # immutable


class _BodyHttpRequest(HttpRequest):
    """The HTTP side of a body's request: nothing came with it, so every container is empty, read-only and
    shared by every body (a running task holds its request for as long as it runs)."""

    GET = POST = _NOTHING_SENT
    FILES: Any = _NOTHING_SENT
    COOKIES: Any = MappingProxyType({})
    META: Any = MappingProxyType({})
    method = "POST"
    path = path_info = ""
    resolver_match = content_type = content_params = None

    def __init__(self, user: Any, auth: Any) -> None:  # (no super(): its containers are the shared ones)
        self.user = user
        self.auth = auth


@functools.lru_cache(maxsize=256)
def _meta_of(text: str) -> RequestMeta:
    return RequestMeta.model_validate(json.loads(text))  # (json: it takes the lone surrogates a client may send)


def shared_meta(meta: RequestMeta) -> RequestMeta:
    """``meta`` for a body: without the progress token (its response is gone), and one object for every
    body whose request declared the same (clients send the same ``_meta`` with every call, and a running
    task holds it for as long as it runs). Read it; do not change it."""
    declared = meta.model_dump(by_alias=True, exclude_none=True, exclude={"progress_token"})
    return _meta_of(json.dumps(declared, sort_keys=True))


def body_request(
    *, user: Any, auth: Any, tool: str, arguments: Any, meta: RequestMeta, namespace: str, request_id: Any = None
) -> TaskRequest:
    """The request a task's body runs with, wherever it runs: the caller (``user``, ``auth``), the call
    (``name`` and ``arguments``) and what the client declared (``meta``, as :func:`shared_meta`).

    Not the HTTP request it came in: a body runs on after the response (or on a fleet worker), and keeps
    no headers (credentials among them), no body and nothing else of a request that is over.
    """
    return TaskRequest(
        _BodyHttpRequest(user, auth),
        request_id=request_id,
        method="tools/call",
        params={"name": tool, "arguments": arguments},
        meta=shared_meta(meta),
        namespace=namespace,
        era="modern",
    )


def detached(request: McpRequest) -> TaskRequest:
    """:func:`body_request` for a task created by ``request`` (taken before its response is sent)."""
    return body_request(
        user=request.user,
        auth=request.auth,
        tool=request.params["name"],
        arguments=request.params.get("arguments"),
        meta=request.meta,
        namespace=request.namespace,
        request_id=request.id,
    )


def current_task(request: McpRequest) -> TaskContext | None:
    """The task the request's body runs as, or None (``request.task`` where it exists)."""
    task = getattr(request, "task", None)
    return task if isinstance(task, TaskContext) else None


class CreatesTasks(Protocol):
    """What a tool call's body asks to start a task (:class:`~.plugin.McpTasks`)."""

    async def acreate(
        self, request: McpRequest, tool: Tool, run: Run, status_message: str = "", backend: str | None = None
    ) -> ExtensionResult: ...


@dataclass(frozen=True)
class CallInRequest:
    """The tool call a body runs in, while it runs in the request (what :func:`~django_mcp.tasks.astart_task` needs)."""

    plugin: CreatesTasks
    request: McpRequest
    tool: Tool
    served: bool
    """Whether a task can be created for the call: the extension serves the request, the client declared
    it, and the body can run on after the response (an ASGI server)."""


current_call: contextvars.ContextVar[CallInRequest | None] = contextvars.ContextVar(
    "django_mcp_task_call", default=None
)
