"""``McpServer``: one MCP endpoint of a Django project (registries, options, extensions, auth), mountable in urls.py."""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Any, cast

from django.urls import Resolver404, URLPattern, re_path, resolve
from django.utils.module_loading import import_string

from .conf import McpSettings, get_settings
from .decorators import client_endpoint
from .server.dispatch import Dispatcher
from .server.extensions import ExtensionPlugin
from .server.lifecycle import lifecycle
from .server.options import ResolvedOptions, ServerOptions
from .server.prompts.definition import PromptRegistry
from .server.prompts.definition import prompts as project_prompts
from .server.request import McpRequest
from .server.resources.definition import ResourceRegistry
from .server.resources.definition import resources as project_resources
from .server.tools.registry import ToolRegistry
from .server.tools.registry import registry as project_tools

if TYPE_CHECKING:
    from django.http import HttpRequest, HttpResponseBase
    from django.urls import URLPattern
    from ninja import NinjaAPI

_UNSET: Any = object()

servers: weakref.WeakSet[McpServer] = weakref.WeakSet()
"""Every server built in this process (the system checks inspect them)."""


def server_at(path: str) -> McpServer | None:
    """The server whose endpoint ``path`` (e.g. ``/mcp``) resolves to in the root URLconf, or None."""
    try:
        match = resolve(path)
    except Resolver404:
        return None
    return next((server for server in list(servers) if server.serves(match.func)), None)


class McpServer:
    """One MCP server: its tools, prompts, resources, options, extensions and auth. Mount it with :attr:`urls`.

    ``options`` is a :class:`ServerOptions` or a callable of the ``HttpRequest``
    returning one for per-request options. ``auth`` is any django-ninja auth
    (e.g. an ``HttpBearer`` subclass or ``ninja.security.django_auth``); by
    default it is taken from ``DJANGO_MCP["AUTH"]``, and None serves everyone.
    The registries default to the project-wide ones that :func:`tool`,
    :func:`prompt` and :func:`resource` fill. Each extension plugin serves
    one server.
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
        self._auth = auth
        self.urls_namespace = urls_namespace
        plugins = tuple(extension_plugins)
        self.dispatcher = Dispatcher(
            tools=tools if tools is not None else project_tools,
            prompts=prompts if prompts is not None else project_prompts,
            resources=resources if resources is not None else project_resources,
            options=self.options_for,
            options_per_request=callable(self._options),
            plugins=plugins,
        )
        for plugin in plugins:
            plugin.install(urls_namespace, self.dispatcher.tools)
            lifecycle.on_shutdown(plugin.shutdown)
        self._started: asyncio.Future[None] | None = None
        self._api: NinjaAPI | None = None
        self._views: frozenset[Callable[..., Any]] = frozenset()  # the one view serving this endpoint
        self._pattern: URLPattern | None = None  # ninja's, its view replaced by the one in _views
        self._app_names: tuple[str, str] = ("", "")
        self._resolved: tuple[McpSettings, ResolvedOptions] | None = None  # static options, resolved once
        servers.add(self)

    @property
    def tools(self) -> ToolRegistry:
        return self.dispatcher.tools

    @property
    def prompts(self) -> PromptRegistry:
        return self.dispatcher.prompts

    @property
    def resources(self) -> ResourceRegistry:
        return self.dispatcher.resources

    @property
    def extension_plugins(self) -> tuple[ExtensionPlugin, ...]:
        return self.dispatcher.plugins

    def options_for(self, request: McpRequest) -> ResolvedOptions:
        """This server's options for ``request``, defaults filled from ``DJANGO_MCP``."""
        settings = get_settings()
        if callable(self._options):
            return self._options(request.http_request).resolved(settings)
        resolved = self._resolved
        if resolved is None or resolved[0] is not settings:  # settings are re-read on setting_changed
            resolved = self._resolved = (settings, self._options.resolved(settings))
        return resolved[1]

    @property
    def auth(self) -> Any:
        """The django-ninja auth guarding the endpoint, or None."""
        if self._auth is _UNSET:
            path = get_settings().AUTH
            if path is None:
                return None
            auth = import_string(path)
            return auth() if isinstance(auth, type) else auth
        return self._auth

    @property
    def urls(self) -> tuple[list[URLPattern], str, str]:
        """For ``path("mcp", server.urls)`` (or ``include(server.urls)``): served at the route and with a slash added.

        ``path("mcp/", ...)`` serves ``/mcp/`` only (check ``django_mcp.W013``): use :func:`mcp_path`.
        """
        if self._api is None:
            from .transport.views import build_api  # here: ninja reads the settings when imported

            self._api = build_api(self)
            # Ninja lists one pattern per operation, all on the empty route: the first resolves every method.
            patterns, app_name, namespace = cast("tuple[list[URLPattern], str, str]", self._api.urls)
            self._pattern, self._app_names = patterns[0], (app_name, namespace)
            self._views = frozenset({_client_view(patterns[0].callback)})
        (view,), pattern, (app_name, namespace) = self._views, self._pattern, self._app_names
        assert pattern is not None
        # The endpoint's own route is empty; one more answers a trailing slash after a route without one
        # (\A, not ^: Django's urls.W002 flags a pattern starting "^/").
        own = URLPattern(pattern.pattern, view, pattern.default_args, pattern.name)
        return [own, re_path(r"\A/\Z", view)], app_name, namespace

    def serves(self, view: Callable[..., Any]) -> bool:
        """Whether ``view`` (a resolved URL's callback) is this server's endpoint."""
        return view in self._views

    async def astarted(self) -> None:
        """Run the extensions' startup hooks once, on the serving loop, before the first request is served."""
        loop = asyncio.get_running_loop()
        if self._started is None or self._started.get_loop() is not loop:
            started = self._started = loop.create_future()
            try:
                for plugin in self.extension_plugins:
                    await plugin.startup()
            except BaseException:
                self._started = None
                started.cancel()  # concurrent first requests retry with the next one
                raise
            started.set_result(None)
        elif not self._started.done():
            await asyncio.shield(self._started)

    def __repr__(self) -> str:
        return f"<McpServer {self.urls_namespace!r}>"


def _client_view(ninja_view: Callable[..., Awaitable[HttpResponseBase]]) -> Callable[..., Awaitable[HttpResponseBase]]:
    """The endpoint's view: ninja's, as a function of its own to mark (ninja may hand back a shared method)."""

    async def endpoint(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        return await ninja_view(request, *args, **kwargs)

    endpoint.csrf_exempt = True  # type: ignore[attr-defined]  # as ninja marks its views: the auth guards
    return client_endpoint(endpoint)
