"""The dispatch core: which method serves a request, with which params, in which context.

:class:`Dispatcher` knows the core methods and the installed extensions'
methods; for each admitted request it builds a :class:`ServerContext` (what a
method handler may use: registries, resolved options, capabilities, the
extensions enabled for the request), validates the params against the
method's model, and calls the handler. It knows nothing of HTTP, eras or
sessions: a front (the view) turns a wire request into an :class:`McpRequest`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

from pydantic import BaseModel

from ..conf import get_settings
from ..protocol.errors import method_not_found, missing_capability
from ..protocol.jsonrpc import META_SERVER_INFO
from ..protocol.validation import SUPPORTED_VERSIONS
from .context import ServerContext
from .extensions import ExtensionMethod, ExtensionPlugin
from .listen import ListenStream
from .methods import completion, subscriptions
from .methods import prompts as prompt_methods
from .methods import resources as resource_methods
from .methods import tools as tool_methods
from .mrtr import MRTR_METHODS, InputRequired
from .notify import has_channel_layer
from .options import ResolvedOptions
from .params import (
    CallToolParams,
    CompleteParams,
    GetPromptParams,
    ListenParams,
    ListParams,
    Params,
    ReadResourceParams,
    parse_params,
)
from .prompts.definition import PromptRegistry
from .rates import aenforce_request_rate
from .request import McpRequest
from .resources.definition import ResourceRegistry
from .tools.registry import ToolRegistry

CoreHandler = Callable[[ServerContext, McpRequest, Any], Awaitable[Any]]


@dataclass(frozen=True)
class CoreMethod:
    handler: CoreHandler
    params_model: type[BaseModel] = Params
    capability: str | None = None
    """The server capability the method belongs to (None: always served)."""


async def _discover(context: ServerContext, request: McpRequest, params: Params) -> dict[str, Any]:
    result: dict[str, Any] = {
        "supportedVersions": list(SUPPORTED_VERSIONS),
        "capabilities": context.capabilities,
        **context.cache_hints(),
    }
    if context.options_per_request:
        result["cacheScope"] = "private"  # per-request options may depend on who asks: never share that answer
    if context.options.instructions is not None:
        result["instructions"] = context.options.instructions
    return result


CORE_METHODS: Mapping[str, CoreMethod] = {
    "server/discover": CoreMethod(_discover),
    "subscriptions/listen": CoreMethod(subscriptions.listen, ListenParams),
    "tools/list": CoreMethod(tool_methods.list_tools, ListParams, "tools"),
    "tools/call": CoreMethod(tool_methods.call_tool, CallToolParams, "tools"),
    "prompts/list": CoreMethod(prompt_methods.list_prompts, ListParams, "prompts"),
    "prompts/get": CoreMethod(prompt_methods.get_prompt, GetPromptParams, "prompts"),
    "resources/list": CoreMethod(resource_methods.list_resources, ListParams, "resources"),
    "resources/templates/list": CoreMethod(resource_methods.list_resource_templates, ListParams, "resources"),
    "resources/read": CoreMethod(resource_methods.read_resource, ReadResourceParams, "resources"),
    "completion/complete": CoreMethod(completion.complete, CompleteParams, "completions"),
}

# Params mirrored by the Mcp-Name routing header, per core method.
CORE_NAME_PARAMS = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}


class Dispatcher:
    """Serves admitted requests for one server's registries, options and extensions."""

    def __init__(
        self,
        *,
        tools: ToolRegistry,
        prompts: PromptRegistry,
        resources: ResourceRegistry,
        options: Callable[[McpRequest], ResolvedOptions],
        options_per_request: bool,
        plugins: Iterable[ExtensionPlugin],
    ) -> None:
        self.tools = tools
        self.prompts = prompts
        self.resources = resources
        self._options = options
        self._options_per_request = options_per_request
        self.plugins: tuple[ExtensionPlugin, ...] = tuple(plugins)
        self._extension_methods: dict[str, tuple[ExtensionPlugin, ExtensionMethod]] = {}
        identifiers: set[str] = set()
        for plugin in self.plugins:
            if not plugin.identifier or plugin.identifier in identifiers:
                raise ValueError(f"Extension plugin {plugin!r} needs a unique, non-empty identifier")
            identifiers.add(plugin.identifier)
            for method, spec in plugin.methods().items():
                if method in CORE_METHODS or method in self._extension_methods:
                    raise ValueError(f"Extension {plugin.identifier!r} redefines method {method!r}")
                self._extension_methods[method] = (plugin, spec)
        self.name_params: Mapping[str, str] = {
            **CORE_NAME_PARAMS,
            **{m: spec.name_param for m, (_, spec) in self._extension_methods.items() if spec.name_param},
        }

    def context_for(self, request: McpRequest) -> ServerContext:
        """The context method handlers get for ``request``."""
        plugins = tuple(p for p in self.plugins if _serves(p, request))
        return ServerContext(
            tools=self.tools,
            prompts=self.prompts,
            resources=self.resources,
            options=self._options(request),
            # Static options make discovery cacheable across requests: it advertises every extension then.
            advertise=partial(
                self.capabilities,
                request,
                plugins if self._options_per_request or request.era != "modern" else self.plugins,
            ),
            plugins=plugins,
            inactive_plugins=() if plugins == self.plugins else tuple(p for p in self.plugins if p not in plugins),
            options_per_request=self._options_per_request,
        )

    def capabilities(self, request: McpRequest, plugins: Iterable[ExtensionPlugin]) -> dict[str, Any]:
        """``ServerCapabilities``: exactly what is registered and served to this request."""
        notify = has_channel_layer()
        caps: dict[str, Any] = {}
        if self.serves("tools"):
            caps["tools"] = {"listChanged": notify}
        if self.serves("prompts"):
            caps["prompts"] = {"listChanged": notify}
        if self.serves("resources"):
            caps["resources"] = {"subscribe": notify, "listChanged": notify}
        if self.serves("completions"):
            caps["completions"] = {}
        caps["logging"] = {}
        extensions = {p.identifier: p.capability(request) for p in plugins}
        if extensions:
            caps["extensions"] = extensions
        return caps

    def serves(self, capability: str) -> bool:
        """Whether the core capability ``capability`` (``tools``, ``completions`` …) is advertised."""
        if capability == "tools":
            return bool(len(self.tools))
        if capability == "prompts":
            return bool(len(self.prompts))
        if capability == "resources":
            return bool(len(self.resources))
        if capability == "completions":
            return bool(len(self.prompts) or self.resources.templates())
        return capability == "logging"

    async def adispatch(self, request: McpRequest) -> dict[str, Any] | ListenStream:
        """Serve one admitted request: a result, a listen stream, or ``McpJsonRpcError``."""
        if get_settings().RATE_LIMIT is not None:
            await aenforce_request_rate(request)
        core = CORE_METHODS.get(request.method)
        if core is None:
            result = await self._aserve_extension(request)
            options = self._options(request)
        else:
            context = self.context_for(request)
            result = await self._aserve_core(core, context, request)
            options = context.options
        if isinstance(result, ListenStream):
            return result
        return finish_result(options, result)

    async def _aserve_core(self, core: CoreMethod, context: ServerContext, request: McpRequest) -> Any:
        if core.capability is not None and not self.serves(core.capability):
            raise method_not_found(request.method)
        params = parse_params(core.params_model, request.method, request.params)
        if request.method in MRTR_METHODS and ("requestState" in request.params or "inputResponses" in request.params):
            request.input_rounds  # noqa: B018 - verify requestState before any work is done
        try:
            return await core.handler(context, request, params)
        except InputRequired as pending:
            return pending.to_result()

    async def _aserve_extension(self, request: McpRequest) -> Any:
        """An extension's method (``tasks/get`` …): its handler needs no :class:`ServerContext`, so none is built."""
        plugin, spec = self._extension_methods.get(request.method, (None, None))
        if plugin is None or spec is None or not _serves(plugin, request):
            raise method_not_found(request.method)
        if spec.requires_declaration and not request.declares_extension(plugin.identifier):
            raise missing_capability({"extensions": {plugin.identifier: {}}})
        return await spec.handler(request, parse_params(spec.params_model, request.method, request.params))


def _serves(plugin: ExtensionPlugin, request: McpRequest) -> bool:
    # Extensions are a 2026-07-28 feature: a handshake-era client is served the core only.
    return request.era == "modern" and plugin.enabled(request)


def finish_result(options: ResolvedOptions, result: dict[str, Any]) -> dict[str, Any]:
    """Add ``resultType`` and the server identity in ``_meta`` to a result."""
    result.setdefault("resultType", "complete")
    if options.server_info_in_meta:
        meta = dict(result.get("_meta") or {})
        meta.setdefault(META_SERVER_INFO, options.server_info())
        result["_meta"] = meta
    return result
