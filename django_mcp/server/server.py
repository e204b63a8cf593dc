"""``McpServer``: what one MCP endpoint serves, and method dispatch."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from asgiref.sync import sync_to_async

from ..conf import get_settings
from ..protocol.errors import McpJsonRpcError, invalid_params, method_not_found, missing_capability
from ..protocol.headers import check_param_headers
from ..protocol.jsonrpc import META_SERVER_INFO
from ..protocol.ladder import SUPPORTED_VERSIONS
from .context import McpRequest
from .extensions import ExtensionMethod, ExtensionPlugin
from .options import ResolvedOptions, ServerOptions
from .pagination import decode_cursor, encode_cursor
from .registry import ToolRegistry, registry
from .results import call_tool_result, exception_result

if TYPE_CHECKING:
    from django.http import HttpRequest
    from django.urls import URLPattern

CoreHandler = Callable[["McpServer", McpRequest], Awaitable[dict[str, Any]]]

# Params mirrored by the Mcp-Name routing header, per core method.
_CORE_NAME_PARAMS = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}

_UNSET: Any = object()


class McpServer:
    """One MCP server: its tools, options, extensions and auth. Mount it with :attr:`urls`.

    ``options`` is a :class:`ServerOptions` or a callable of the ``HttpRequest``
    returning one. ``auth`` is any django-ninja auth (e.g. an ``HttpBearer``
    subclass or ``ninja.security.django_auth``); by default it is taken from
    ``DJANGO_MCP["AUTH"]``, and None serves everyone.
    """

    def __init__(
        self,
        options: ServerOptions | Callable[[HttpRequest], ServerOptions] | None = None,
        *,
        tools: ToolRegistry | None = None,
        extension_plugins: Iterable[ExtensionPlugin] = (),
        auth: Any = _UNSET,
        urls_namespace: str = "django_mcp",
    ) -> None:
        self._options = options if options is not None else ServerOptions()
        self.tools = tools if tools is not None else registry
        self.extension_plugins: tuple[ExtensionPlugin, ...] = tuple(extension_plugins)
        self._auth = auth
        self.urls_namespace = urls_namespace
        self._core: dict[str, CoreHandler] = {
            "server/discover": McpServer._discover,
            "tools/list": McpServer._list_tools,
            "tools/call": McpServer._call_tool,
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

    # -- dispatch ----------------------------------------------------------------

    def advertised_extensions(self, http_request: HttpRequest) -> dict[str, Any]:
        """``capabilities.extensions``: every plugin, or only enabled ones with per-request options."""
        return {
            p.identifier: p.capability(http_request)
            for p in self.extension_plugins
            if not self.options_per_request or p.enabled(http_request)
        }

    async def dispatch(self, request: McpRequest) -> dict[str, Any]:
        """Serve one admitted request; returns the result or raises ``McpJsonRpcError``."""
        core = self._core.get(request.method)
        if core is not None:
            result = await core(self, request)
        else:
            plugin, spec = self._extension_methods.get(request.method, (None, None))
            if plugin is None or spec is None or not plugin.enabled(request.http_request):
                raise method_not_found(request.method)
            if spec.requires_declaration and not request.declares_extension(plugin.identifier):
                raise missing_capability({"extensions": {plugin.identifier: {}}})
            result = await spec.handler(request)
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

    async def _discover(self, request: McpRequest) -> dict[str, Any]:
        options = self.options_for(request.http_request)
        capabilities: dict[str, Any] = {"tools": {}, "logging": {}}
        extensions = self.advertised_extensions(request.http_request)
        if extensions:
            capabilities["extensions"] = extensions
        result: dict[str, Any] = {
            "supportedVersions": list(SUPPORTED_VERSIONS),
            "capabilities": capabilities,
            "ttlMs": options.cache_ttl_ms,
            # Per-request options may depend on who asks: never share that answer.
            "cacheScope": "private" if self.options_per_request else options.cache_scope,
        }
        if options.instructions is not None:
            result["instructions"] = options.instructions
        return result

    async def _list_tools(self, request: McpRequest) -> dict[str, Any]:
        options = self.options_for(request.http_request)
        tools = list(self.tools)
        start = decode_cursor(request.params.get("cursor"), len(tools))
        end = start + options.page_size
        result: dict[str, Any] = {
            "tools": [t.to_wire() for t in tools[start:end]],
            "ttlMs": options.cache_ttl_ms,
            "cacheScope": options.cache_scope,
        }
        if end < len(tools):
            result["nextCursor"] = encode_cursor(end)
        return result

    async def _call_tool(self, request: McpRequest) -> dict[str, Any]:
        name = request.params.get("name")
        if not isinstance(name, str):
            raise invalid_params("Invalid params: tools/call needs a string 'name'")
        tool = self.tools.get(name)
        if tool is None:
            raise invalid_params(f"Unknown tool: {name}", {"tool": name})
        arguments = request.params.get("arguments")
        if tool.param_headers:
            check_param_headers(tool.param_headers, arguments if isinstance(arguments, dict) else {}, request.headers)
        kwargs = tool.validate_arguments(arguments)
        try:
            if tool.is_async:
                value = await tool.handler(request, **kwargs)
            else:
                value = await sync_to_async(tool.handler)(request, **kwargs)
        except McpJsonRpcError:
            raise
        except Exception as exc:
            return exception_result(tool, exc)
        return call_tool_result(tool, value)
