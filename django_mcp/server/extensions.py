"""The extension plugin interface: everything an extension (e.g. tasks) may plug into.

A plugin names its identifier and what it advertises under
``capabilities.extensions``; it may serve methods (with typed params), claim
tool options and add per-tool wire metadata, wrap ``tools/call``, honour
listen-filter keys, contribute system checks, and run hooks at startup and at
graceful shutdown. The dispatch core consults nothing else, and names no
extension.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from .params import Params

if TYPE_CHECKING:
    from django.core.checks import CheckMessage

    from .request import McpRequest
    from .tools.definition import Tool
    from .tools.registry import ToolRegistry

ProceedToolCall = Callable[["McpRequest"], Awaitable[Any]]
"""The rest of a ``tools/call``: runs the tool's handler for the request given and returns what it returned."""


@dataclass(frozen=True)
class ListenSubscription:
    """What an extension honours of a ``subscriptions/listen`` filter.

    ``honoured`` goes into the acknowledgement's ``notifications``; the
    stream joins ``groups`` (Channels groups whose ``mcp.notification``
    messages it forwards); ``snapshot``, if given, is awaited after joining and
    its notifications are sent right after the acknowledgement, so a change
    that raced the subscription is not missed.
    """

    honoured: dict[str, Any]
    groups: tuple[str, ...] = ()
    snapshot: Callable[[], Awaitable[list[dict[str, Any]]]] | None = None


@dataclass(frozen=True)
class ExtensionMethod:
    """A JSON-RPC method an extension serves.

    ``handler(request, params)`` gets the :class:`~django_mcp.McpRequest` and
    ``params`` validated as ``params_model`` (-32602 before the handler runs
    if they do not fit), and returns the result object (``resultType`` is
    added if absent). ``name_param`` is the params key mirrored by the
    ``Mcp-Name`` routing header. With ``requires_declaration`` the request
    must declare the extension in its client capabilities (else -32021,
    checked before the params).
    """

    handler: Callable[[McpRequest, Any], Awaitable[dict[str, Any]]]
    params_model: type[BaseModel] = Params
    name_param: str | None = None
    requires_declaration: bool = True


@dataclass(frozen=True)
class ExtensionResult:
    """What an extension answers a ``tools/call`` with instead of a ``CallToolResult`` (e.g. a task handle)."""

    result: dict[str, Any]


class ExtensionPlugin:
    """Base class for a server extension. Subclass, set :attr:`identifier`, override what you need."""

    identifier: str = ""

    tool_options: Mapping[str, Callable[[Any], None]] = {}
    """Tool options this extension understands (``@tool(option=...)``), each with a validator
    that raises ``ValueError`` for a bad value. An option no installed plugin claims is a system check error."""

    listen_filter_keys: tuple[str, ...] = ()
    """The ``subscriptions/listen`` filter keys this extension adds (e.g. ``("taskIds",)``)."""

    namespace: str = ""
    """The URL namespace of the server this plugin was installed on (set by :meth:`install`)."""

    tools: ToolRegistry | None = None
    """The tools of the server this plugin was installed on (set by :meth:`install`)."""

    def install(self, namespace: str, tools: ToolRegistry) -> None:
        """Called once by the server that installs this plugin; a plugin serves one server."""
        if self.namespace:
            raise ValueError(f"{type(self).__name__} is already installed on server {self.namespace!r}")
        self.namespace = namespace
        self.tools = tools

    def enabled(self, request: McpRequest) -> bool:
        """Whether this extension serves ``request`` (a refused request gets -32601 for its methods)."""
        return True

    def capability(self, request: McpRequest) -> dict[str, Any]:
        """The settings object advertised at ``capabilities.extensions[identifier]``."""
        return {}

    def methods(self) -> Mapping[str, ExtensionMethod]:
        """The methods this extension serves, by JSON-RPC method name."""
        return {}

    def decorate_tool(self, tool: Tool, wire: dict[str, Any]) -> None:
        """Add this extension's metadata to one ``tools/list`` entry (e.g. from its tool options)."""

    async def call_tool(self, request: McpRequest, tool: Tool, proceed: ProceedToolCall) -> Any:
        """Wrap a ``tools/call`` (after the arguments were validated): by default, just ``proceed``.

        Return what the handler returned (it becomes the ``CallToolResult``),
        an :class:`ExtensionResult` to answer with something else, or raise
        ``McpJsonRpcError`` to refuse the call.
        """
        return await proceed(request)

    async def call_tool_unserved(self, request: McpRequest, tool: Tool, proceed: ProceedToolCall) -> Any:
        """Wrap a ``tools/call`` this extension does not serve (a handshake-era request, or the plugin is
        disabled for it): by default, just ``proceed``.

        Raise ``McpJsonRpcError`` if ``tool`` cannot run without the extension; pass ``proceed`` the
        request the tool's handler expects when it runs without the extension.
        """
        return await proceed(request)

    async def subscribe(self, request: McpRequest, notifications: Mapping[str, Any]) -> ListenSubscription:
        """Honour this extension's keys of a listen filter. Raise ``McpJsonRpcError`` to refuse.

        Called only when the filter names one of :attr:`listen_filter_keys`
        and the extension is enabled for the request.
        """
        return ListenSubscription({})

    def check(self, tools: list[Tool]) -> list[CheckMessage]:
        """System checks for this plugin as installed, given the tools its server serves."""
        return []

    async def startup(self) -> None:
        """Run once in the serving process, on its event loop, before the first request reaches this server."""

    async def shutdown(self, grace_seconds: float) -> None:
        """Graceful shutdown (SIGTERM/SIGINT): wind down within ``grace_seconds``."""
