"""The server the transport serves, as the transport sees it (the endpoint's ``McpServer`` builds the view)."""

from __future__ import annotations

from typing import Any, Protocol

from ..server.dispatch import Dispatcher
from ..server.prompts.definition import PromptRegistry
from ..server.resources.definition import ResourceRegistry
from ..server.tools.registry import ToolRegistry


class MountedServer(Protocol):
    """What the view, both eras' fronts and stdio use of an :class:`~django_mcp.endpoint.McpServer`."""

    @property
    def urls_namespace(self) -> str:
        """The server's name: its URL namespace, and the scope of its principals' digests."""
        ...

    @property
    def dispatcher(self) -> Dispatcher: ...

    @property
    def auth(self) -> Any:
        """The view's authentication (a django-ninja auth, e.g. ``BearerAuth``), or None."""
        ...

    @property
    def tools(self) -> ToolRegistry: ...

    @property
    def prompts(self) -> PromptRegistry: ...

    @property
    def resources(self) -> ResourceRegistry: ...

    async def astarted(self) -> None:
        """Run the startup hooks once, before the first request is served."""
        ...
