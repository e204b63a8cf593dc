"""The extension plugin interface: how an extension (e.g. tasks) plugs into a server.

A plugin names its identifier, says what it advertises under
``capabilities.extensions``, lists the methods it serves, and decides per
request whether it is enabled. The core consults nothing else.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from django.http import HttpRequest

    from .context import McpRequest
    from .tools import Tool


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

    ``handler`` gets the :class:`~django_mcp.McpRequest` and returns the
    result object (``resultType`` is added if absent). ``name_param`` is the
    params key mirrored by the ``Mcp-Name`` routing header. With
    ``requires_declaration`` the request must declare the extension in its
    client capabilities (else -32021, checked before the handler runs).
    """

    handler: Callable[[McpRequest], Awaitable[dict[str, Any]]]
    name_param: str | None = None
    requires_declaration: bool = True


class ExtensionPlugin:
    """Base class for a server extension. Subclass and set :attr:`identifier`."""

    identifier: str = ""

    def capability(self, request: HttpRequest) -> dict[str, Any]:
        """The settings object advertised at ``capabilities.extensions[identifier]``."""
        return {}

    def methods(self) -> Mapping[str, ExtensionMethod]:
        """The methods this extension serves, by JSON-RPC method name."""
        return {}

    def check_tool_call(self, request: McpRequest, tool: Tool) -> None:
        """Refuse a ``tools/call`` before its handler runs by raising ``McpJsonRpcError``.

        Called after the tool is found and before its arguments are
        validated, for every extension enabled for the request.
        """

    listen_filter_keys: tuple[str, ...] = ()
    """The ``subscriptions/listen`` filter keys this extension adds (e.g. ``("taskIds",)``)."""

    async def subscribe(self, request: McpRequest, notifications: dict[str, Any]) -> ListenSubscription:
        """Honour this extension's keys of a listen filter. Raise ``McpJsonRpcError`` to refuse.

        Called only when the filter names one of :attr:`listen_filter_keys`
        and the extension is enabled for the request.
        """
        return ListenSubscription({})

    def enabled(self, request: HttpRequest) -> bool:
        """Whether this extension serves ``request`` (a refused request gets -32601 for its methods)."""
        return True
