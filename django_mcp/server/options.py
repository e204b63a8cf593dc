"""Per-server options: static, or computed per request."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ..conf import McpSettings


@dataclass(frozen=True)
class ServerOptions:
    """What a server says about itself. ``None`` means "take it from ``DJANGO_MCP``".

    Pass one to :class:`~django_mcp.McpServer`, or a callable of the
    ``HttpRequest`` returning one for per-request options (discovery then
    follows each request, and is cached privately).
    """

    name: str | None = None
    version: str | None = None
    title: str | None = None
    instructions: str | None = None
    cache_ttl_seconds: float | None = None
    cache_scope: Literal["public", "private"] | None = None
    page_size: int | None = None
    server_info_in_meta: bool | None = None

    def resolved(self, settings: McpSettings) -> ResolvedOptions:
        return ResolvedOptions(
            name=self.name if self.name is not None else settings.SERVER_NAME,
            version=self.version if self.version is not None else settings.SERVER_VERSION,
            title=self.title if self.title is not None else settings.SERVER_TITLE,
            instructions=self.instructions if self.instructions is not None else settings.INSTRUCTIONS,
            cache_ttl_seconds=(
                self.cache_ttl_seconds if self.cache_ttl_seconds is not None else settings.CACHE_TTL_SECONDS
            ),
            cache_scope=self.cache_scope if self.cache_scope is not None else settings.CACHE_SCOPE,
            page_size=self.page_size if self.page_size is not None else settings.PAGE_SIZE,
            server_info_in_meta=(
                self.server_info_in_meta if self.server_info_in_meta is not None else settings.SERVER_INFO_IN_META
            ),
        )


@dataclass(frozen=True)
class ResolvedOptions:
    name: str
    version: str
    title: str | None
    instructions: str | None
    cache_ttl_seconds: float
    cache_scope: Literal["public", "private"]
    page_size: int
    server_info_in_meta: bool

    def server_info(self) -> dict[str, str]:
        info = {"name": self.name, "version": self.version}
        if self.title is not None:
            info["title"] = self.title
        return info
