"""``McpServer``: what one MCP endpoint serves, and method dispatch."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from django.conf import settings as django_settings
from django.db import InterfaceError, OperationalError

from ..conf import get_settings
from ..protocol.errors import (
    INTERNAL_ERROR,
    McpJsonRpcError,
    invalid_params,
    method_not_found,
    missing_capability,
)
from ..protocol.headers import check_param_headers
from ..protocol.jsonrpc import META_SERVER_INFO
from ..protocol.ladder import SUPPORTED_VERSIONS
from .context import McpRequest
from .extensions import ExtensionMethod, ExtensionPlugin
from .handlers import call_handler
from .listen import ListenStream
from .mrtr import MRTR_METHODS, InputRequired
from .notify import resource_group
from .options import ResolvedOptions, ServerOptions
from .pagination import paginate
from .prompts import PromptRegistry, prompt_result
from .prompts import prompts as project_prompts
from .registry import Registry, ToolRegistry
from .registry import registry as project_tools
from .resources import ResourceRegistry, ResourceTemplate, resource_contents
from .resources import resources as project_resources
from .results import call_tool_result, exception_result

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
_LIST_FLAGS = {"toolsListChanged": "tools", "promptsListChanged": "prompts", "resourcesListChanged": "resources"}
_MAX_COMPLETIONS = 100

_UNSET: Any = object()


def _has_channel_layer() -> bool:
    return "default" in getattr(django_settings, "CHANNEL_LAYERS", {})


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
            "subscriptions/listen": McpServer._listen,
            "tools/list": McpServer._list_tools,
            "tools/call": McpServer._call_tool,
            "prompts/list": McpServer._list_prompts,
            "prompts/get": McpServer._get_prompt,
            "resources/list": McpServer._list_resources,
            "resources/templates/list": McpServer._list_resource_templates,
            "resources/read": McpServer._read_resource,
            "completion/complete": McpServer._complete,
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
        notify = _has_channel_layer()
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

    def _cache_hints(self, request: McpRequest) -> dict[str, Any]:
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

    async def _list_tools(self, request: McpRequest) -> dict[str, Any]:
        return self._page(request, "tools", [t.to_wire() for t in self.tools])

    def _page(self, request: McpRequest, key: str, items: list[dict[str, Any]]) -> dict[str, Any]:
        page, next_cursor = paginate(
            items, request.params.get("cursor"), self.options_for(request.http_request).page_size
        )
        result: dict[str, Any] = {key: page, **self._cache_hints(request)}
        if next_cursor is not None:
            result["nextCursor"] = next_cursor
        return result

    async def _call_tool(self, request: McpRequest) -> dict[str, Any]:
        name = request.params.get("name")
        if not isinstance(name, str):
            raise invalid_params("Invalid params: tools/call needs a string 'name'")
        tool = self.tools.get(name)
        if tool is None:
            raise invalid_params(f"Unknown tool: {name}", {"tool": name})
        for plugin in self.extension_plugins:
            if plugin.enabled(request.http_request):
                plugin.check_tool_call(request, tool)
        arguments = request.params.get("arguments")
        if tool.param_headers:
            check_param_headers(tool.param_headers, arguments if isinstance(arguments, dict) else {}, request.headers)
        kwargs = tool.validate_arguments(arguments)
        try:
            value = await call_handler(tool.handler, request, **kwargs)
        except (McpJsonRpcError, InputRequired, OperationalError, InterfaceError):
            raise  # a lost database is the server's problem (503), not the tool's
        except Exception as exc:
            return exception_result(tool, exc)
        return call_tool_result(tool, value)

    # -- prompts -------------------------------------------------------------------

    async def _list_prompts(self, request: McpRequest) -> dict[str, Any]:
        return self._page(request, "prompts", [p.to_wire() for p in self.prompts])

    async def _get_prompt(self, request: McpRequest) -> dict[str, Any]:
        name = request.params.get("name")
        found = self.prompts.get(name) if isinstance(name, str) else None
        if found is None:
            raise invalid_params(f"Unknown prompt: {name}", {"prompt": name})
        kwargs = found.validate_arguments(request.params.get("arguments"))
        value = await _run(f"Prompt {name!r}", found.handler, request, **kwargs)
        return prompt_result(found, value)

    # -- resources -----------------------------------------------------------------

    async def _list_resources(self, request: McpRequest) -> dict[str, Any]:
        return self._page(request, "resources", [r.to_wire() for r in self.resources.static()])

    async def _list_resource_templates(self, request: McpRequest) -> dict[str, Any]:
        return self._page(request, "resourceTemplates", [t.to_wire() for t in self.resources.templates()])

    async def _read_resource(self, request: McpRequest) -> dict[str, Any]:
        uri = request.params.get("uri")
        if not isinstance(uri, str):
            raise invalid_params("Invalid params: resources/read needs a string 'uri'")
        found = self.resources.resolve(uri)
        if found is None:
            raise invalid_params(f"Resource not found: {uri}", {"uri": uri})
        item, variables = found
        value = await _run(f"Resource {uri!r}", item.handler, request, **variables)
        return {"contents": resource_contents(uri, item.mime_type, value), **self._cache_hints(request)}

    # -- completion ----------------------------------------------------------------

    async def _complete(self, request: McpRequest) -> dict[str, Any]:
        ref, argument = request.params.get("ref"), request.params.get("argument")
        if not isinstance(ref, dict) or not isinstance(argument, dict) or not isinstance(argument.get("name"), str):
            raise invalid_params("Invalid params: completion/complete needs 'ref' and 'argument' {name, value}")
        completers: Mapping[str, Any]
        if ref.get("type") == "ref/prompt":
            found_prompt = self.prompts.get(ref.get("name", ""))
            if found_prompt is None:
                raise invalid_params(f"Unknown prompt: {ref.get('name')}", {"ref": ref})
            completers = found_prompt.completers
        elif ref.get("type") == "ref/resource":
            found = self.resources.get(ref.get("uri", ""))
            if not isinstance(found, ResourceTemplate):
                raise invalid_params(f"Unknown resource template: {ref.get('uri')}", {"ref": ref})
            completers = found.completers
        else:
            raise invalid_params("Invalid params: ref.type must be 'ref/prompt' or 'ref/resource'", {"ref": ref})
        completer = completers.get(argument["name"])
        values: list[str] = []
        if completer is not None:
            context = request.params.get("context")
            known = context.get("arguments", {}) if isinstance(context, dict) else {}
            value = argument.get("value", "")
            values = [str(v) for v in await _run("Completer", completer, request, value, known)]
        return {
            "completion": {
                "values": values[:_MAX_COMPLETIONS],
                "total": len(values),
                "hasMore": len(values) > _MAX_COMPLETIONS,
            }
        }

    # -- subscriptions ---------------------------------------------------------------

    async def _listen(self, request: McpRequest) -> ListenStream:
        wanted = request.params.get("notifications")
        if not isinstance(wanted, dict):
            raise invalid_params("Invalid params: subscriptions/listen needs a 'notifications' object")
        caps = self.capabilities(request.http_request)
        honoured: dict[str, Any] = {}
        groups: list[str] = []
        registries: dict[str, Registry[Any]] = {
            "tools": self.tools,
            "prompts": self.prompts,
            "resources": self.resources,
        }
        for flag, capability in _LIST_FLAGS.items():
            value = wanted.get(flag, False)
            if not isinstance(value, bool):
                raise invalid_params(f"Invalid params: notifications.{flag} must be a boolean")
            if value and caps.get(capability, {}).get("listChanged"):
                honoured[flag] = True
                groups.append(registries[capability].channel_group)
        uris = wanted.get("resourceSubscriptions", [])
        if not isinstance(uris, list) or not all(isinstance(u, str) for u in uris):
            raise invalid_params("Invalid params: notifications.resourceSubscriptions must be a list of URIs")
        if uris and caps.get("resources", {}).get("subscribe"):
            known = [u for u in dict.fromkeys(uris) if self.resources.resolve(u) is not None]
            if known:
                honoured["resourceSubscriptions"] = known
                groups += [resource_group(u) for u in known]
        snapshots = []
        for plugin in self.extension_plugins:
            if set(plugin.listen_filter_keys) & set(wanted) and plugin.enabled(request.http_request):
                part = await plugin.subscribe(request, wanted)
                honoured.update(part.honoured)
                groups += part.groups
                if part.snapshot is not None:
                    snapshots.append(part.snapshot)
        if groups and not _has_channel_layer():
            raise McpJsonRpcError(INTERNAL_ERROR, "Notifications need a channel layer: configure CHANNEL_LAYERS")
        settings = get_settings()
        options = self.options_for(request.http_request)
        assert request.id is not None  # requests always have one; notifications never get here
        return ListenStream(
            request.id,
            honoured,
            groups,
            snapshots,
            result_meta={META_SERVER_INFO: options.server_info()} if options.server_info_in_meta else {},
            keepalive_seconds=settings.LISTEN_KEEPALIVE_SECONDS,
            queue_size=settings.LISTEN_QUEUE_SIZE,
        )


async def _run(what: str, handler: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Call a prompt/resource/completion handler; an ordinary exception becomes -32603 (traceback logged)."""
    try:
        return await call_handler(handler, *args, **kwargs)
    except (McpJsonRpcError, InputRequired, OperationalError, InterfaceError):
        raise
    except Exception as exc:
        logger.error("%s failed", what, exc_info=exc)
        raise McpJsonRpcError(INTERNAL_ERROR, f"{what} failed: {type(exc).__name__}: {exc}") from None
