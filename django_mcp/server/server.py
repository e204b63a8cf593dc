"""``McpServer``: what one MCP endpoint serves, and method dispatch."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from ..conf import get_settings
from ..protocol.errors import (
    method_not_found,
    missing_capability,
)
from ..protocol.jsonrpc import META_SERVER_INFO
from ..protocol.ladder import SUPPORTED_VERSIONS
from . import completion, prompt_methods, resource_methods, subscriptions, tool_methods
from .context import McpRequest
from .extensions import ExtensionMethod, ExtensionPlugin
from .listen import ListenStream
from .mrtr import MRTR_METHODS, InputRequired
from .notify import has_channel_layer
from .options import ResolvedOptions, ServerOptions
from .pagination import paginate
from .prompts import PromptRegistry
from .prompts import prompts as project_prompts
from .registry import ToolRegistry
from .registry import registry as project_tools
from .resources import ResourceRegistry
from .resources import resources as project_resources

if TYPE_CHECKING:
    from django.http import HttpRequest
    from django.urls import URLPattern

logger = logging.getLogger("django_mcp")

Handler = Callable[["McpServer", McpRequest], Awaitable[Any]]

# Params mirrored by the Mcp-Name routing header, per core method.
_CORE_NAME_PARAMS = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}
# The server capability each core method belongs to (no capability: always served).
_CAPABILITY_OF = {
    "tools/list": "tools",
    "tools/call": "tools",
    "prompts/list": "prompts",
    "prompts/get": "prompts",
    "resources/list": "resources",
    "resources/templates/list": "resources",
    "resources/read": "resources",
    "completion/complete": "completions",
}

_UNSET: Any = object()


class McpServer:
    """One MCP server: its tools, prompts, resources, options, extensions and auth. Mount it with :attr:`urls`.

    ``options`` is a :class:`ServerOptions` or a callable of the ``HttpRequest``
    returning one. ``auth`` is any django-ninja auth (e.g. an ``HttpBearer``
    subclass or ``ninja.security.django_auth``); by default it is taken from
    ``DJANGO_MCP["AUTH"]``, and None serves everyone. The registries default to
    the project-wide ones that :func:`tool`, :func:`prompt` and :func:`resource` fill.
    """

    def __init__(
        self,
        options: ServerOptions | Callable[[HttpRequest], ServerOptions] | None = None,
        *,
        tools: ToolRegistry | None = None,
        prompts: PromptRegistry | None = None,
        resources: ResourceRegistry | None = None,
        extension_plugins: Iterable[ExtensionPlugin] = (),
        auth: Any = _UNSET,
        urls_namespace: str = "django_mcp",
    ) -> None:
        self._options = options if options is not None else ServerOptions()
        self.tools = tools if tools is not None else project_tools
        self.prompts = prompts if prompts is not None else project_prompts
        self.resources = resources if resources is not None else project_resources
        self.extension_plugins: tuple[ExtensionPlugin, ...] = tuple(extension_plugins)
        self._auth = auth
        self.urls_namespace = urls_namespace
        self._core: dict[str, Handler] = {
            "server/discover": McpServer._discover,
            "subscriptions/listen": subscriptions.listen,
            "tools/list": tool_methods.list_tools,
            "tools/call": tool_methods.call_tool,
            "prompts/list": prompt_methods.list_prompts,
            "prompts/get": prompt_methods.get_prompt,
            "resources/list": resource_methods.list_resources,
            "resources/templates/list": resource_methods.list_resource_templates,
            "resources/read": resource_methods.read_resource,
            "completion/complete": completion.complete,
        }
        self._extension_methods: dict[str, tuple[ExtensionPlugin, ExtensionMethod]] = {}
        identifiers: set[str] = set()
        for plugin in self.extension_plugins:
            if not plugin.identifier or plugin.identifier in identifiers:
                raise ValueError(f"Extension plugin {plugin!r} needs a unique, non-empty identifier")
            identifiers.add(plugin.identifier)
            for method, spec in plugin.methods().items():
                if method in self._core or method in self._extension_methods:
                    raise ValueError(f"Extension {plugin.identifier!r} redefines method {method!r}")
                self._extension_methods[method] = (plugin, spec)
        self.name_params: Mapping[str, str] = {
            **_CORE_NAME_PARAMS,
            **{m: spec.name_param for m, (_, spec) in self._extension_methods.items() if spec.name_param},
        }

    # -- options -----------------------------------------------------------------

    @property
    def options_per_request(self) -> bool:
        """Whether options are computed per request (discovery then varies per request)."""
        return callable(self._options)

    def plugin(self, identifier: str) -> ExtensionPlugin | None:
        """The installed extension plugin with this identifier, if any."""
        return next((p for p in self.extension_plugins if p.identifier == identifier), None)

    def options_for(self, http_request: HttpRequest) -> ResolvedOptions:
        options = self._options(http_request) if callable(self._options) else self._options
        return options.resolved(get_settings())

    @property
    def auth(self) -> Any:
        """The django-ninja auth guarding the endpoint, or None."""
        if self._auth is _UNSET:
            from django.utils.module_loading import import_string

            path = get_settings().AUTH
            if path is None:
                return None
            auth = import_string(path)
            return auth() if isinstance(auth, type) else auth
        return self._auth

    @property
    def urls(self) -> tuple[list[URLPattern], str, str]:
        """For ``path("mcp/", server.urls)`` (or ``include(server.urls)``)."""
        from ..views import build_api

        return build_api(self).urls  # type: ignore[return-value]

    # -- capabilities --------------------------------------------------------------

    def capabilities(self, http_request: HttpRequest) -> dict[str, Any]:
        """``ServerCapabilities``: exactly what is registered and served to this request."""
        notify = has_channel_layer()
        caps: dict[str, Any] = {}
        if len(self.tools):
            caps["tools"] = {"listChanged": notify}
        if len(self.prompts):
            caps["prompts"] = {"listChanged": notify}
        if len(self.resources):
            caps["resources"] = {"subscribe": notify, "listChanged": notify}
        if len(self.prompts) or self.resources.templates():
            caps["completions"] = {}
        caps["logging"] = {}
        extensions = {
            p.identifier: p.capability(http_request)
            for p in self.extension_plugins
            if not self.options_per_request or p.enabled(http_request)
        }
        if extensions:
            caps["extensions"] = extensions
        return caps

    # -- dispatch ----------------------------------------------------------------

    async def dispatch(self, request: McpRequest) -> dict[str, Any] | ListenStream:
        """Serve one admitted request: a result, a listen stream, or ``McpJsonRpcError``."""
        core = self._core.get(request.method)
        if core is not None:
            capability = _CAPABILITY_OF.get(request.method)
            if capability is not None and capability not in self.capabilities(request.http_request):
                raise method_not_found(request.method)
            if request.method in MRTR_METHODS and (
                "requestState" in request.params or "inputResponses" in request.params
            ):
                request.input_rounds  # noqa: B018 - verify requestState before any work is done
            try:
                result = await core(self, request)
            except InputRequired as pending:
                result = pending.to_result()
        else:
            plugin, spec = self._extension_methods.get(request.method, (None, None))
            if plugin is None or spec is None or not plugin.enabled(request.http_request):
                raise method_not_found(request.method)
            if spec.requires_declaration and not request.declares_extension(plugin.identifier):
                raise missing_capability({"extensions": {plugin.identifier: {}}})
            result = await spec.handler(request)
        if isinstance(result, ListenStream):
            return result
        return self.finish_result(request.http_request, result)

    def finish_result(self, http_request: HttpRequest, result: dict[str, Any]) -> dict[str, Any]:
        """Add ``resultType`` and the server identity in ``_meta`` to a result."""
        result.setdefault("resultType", "complete")
        options = self.options_for(http_request)
        if options.server_info_in_meta:
            meta = dict(result.get("_meta") or {})
            meta.setdefault(META_SERVER_INFO, options.server_info())
            result["_meta"] = meta
        return result

    def cache_hints(self, request: McpRequest) -> dict[str, Any]:
        """``ttlMs`` and ``cacheScope`` for a cacheable result."""
        options = self.options_for(request.http_request)
        return {"ttlMs": options.cache_ttl_ms, "cacheScope": options.cache_scope}

    async def _discover(self, request: McpRequest) -> dict[str, Any]:
        options = self.options_for(request.http_request)
        result: dict[str, Any] = {
            "supportedVersions": list(SUPPORTED_VERSIONS),
            "capabilities": self.capabilities(request.http_request),
            "ttlMs": options.cache_ttl_ms,
            # Per-request options may depend on who asks: never share that answer.
            "cacheScope": "private" if self.options_per_request else options.cache_scope,
        }
        if options.instructions is not None:
            result["instructions"] = options.instructions
        return result

    # -- tools ---------------------------------------------------------------------

    def page(self, request: McpRequest, key: str, items: list[dict[str, Any]]) -> dict[str, Any]:
        """One page of a list result (``cursor`` in, ``nextCursor`` out) with its caching hints."""
        page, next_cursor = paginate(
            items, request.params.get("cursor"), self.options_for(request.http_request).page_size
        )
        result: dict[str, Any] = {key: page, **self.cache_hints(request)}
        if next_cursor is not None:
            result["nextCursor"] = next_cursor
        return result
