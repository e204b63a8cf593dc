"""What a method handler gets besides the request: :class:`ServerContext` (never the server object itself)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from .extensions import ExtensionPlugin
from .options import ResolvedOptions
from .pagination import paginate
from .params import ListParams
from .prompts.definition import PromptRegistry
from .resources.definition import ResourceRegistry
from .tools.registry import ToolRegistry


@dataclass(frozen=True)
class ServerContext:
    """What a method handler may use to serve one request (never the server object itself)."""

    tools: ToolRegistry
    prompts: PromptRegistry
    resources: ResourceRegistry
    options: ResolvedOptions
    advertise: Callable[[], dict[str, Any]]
    """Builds :attr:`capabilities` (only discovery and a few methods read them)."""
    plugins: tuple[ExtensionPlugin, ...]
    """The extensions enabled for this request."""
    inactive_plugins: tuple[ExtensionPlugin, ...] = ()
    """The extensions installed but not serving this request (disabled for it, or a handshake-era request)."""
    options_per_request: bool = False

    @cached_property
    def capabilities(self) -> dict[str, Any]:
        """``ServerCapabilities``: exactly what is registered and served to this request."""
        return self.advertise()

    def cache_hints(self) -> dict[str, Any]:
        """``ttlMs`` and ``cacheScope`` for a cacheable result."""
        return {"ttlMs": round(self.options.cache_ttl_seconds * 1000), "cacheScope": self.options.cache_scope}

    def page(
        self, params: ListParams, key: str, items: list[dict[str, Any]], *, per_user: bool = False
    ) -> dict[str, Any]:
        """One page of a list result (``cursor`` in, ``nextCursor`` out) with its caching hints.

        ``per_user``: the list depends on who asks (permissions), so no cache may share it.
        """
        page, next_cursor = paginate(items, params.cursor, self.options.page_size)
        result: dict[str, Any] = {key: page, **self.cache_hints()}
        if per_user:
            result["cacheScope"] = "private"
        if next_cursor is not None:
            result["nextCursor"] = next_cursor
        return result
