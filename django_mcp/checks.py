"""System checks (``manage.py check``). IDs are stable and never reused; docs/settings.md lists them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from django.apps import AppConfig
from django.conf import settings
from django.core import checks
from django.core.checks import CheckMessage, Error, Tags, register
from django.urls import NoReverseMatch, Resolver404, get_resolver, resolve, reverse
from django.utils.module_loading import import_string
from django.utils.translation import get_language_from_path

from .conf import SETTINGS_NAME, validate_settings, validation_errors
from .endpoint import servers

if TYPE_CHECKING:
    from .endpoint import McpServer


@register(Tags.compatibility)
def check_settings(
    app_configs: Sequence[AppConfig] | None = None, databases: Sequence[str] | None = None, **kwargs: Any
) -> list[CheckMessage]:
    """E001 not a dict; E002 an invalid or unknown key (of any section); E003 AUTH not importable;
    W003 any Origin in production."""
    try:
        problems = validation_errors()
    except TypeError as exc:
        return [Error(str(exc), hint=f"Set {SETTINGS_NAME} = {{...}}.", id="django_mcp.E001")]
    if problems:
        return [
            Error(
                f"{SETTINGS_NAME}[{key!r}]: {message}",
                hint="See the settings reference in django-mcp's docs/settings.md.",
                obj=SETTINGS_NAME,
                id="django_mcp.E002",
            )
            for key, message in problems
        ]
    mcp = validate_settings()
    messages: list[CheckMessage] = []
    if mcp.AUTH is not None:
        try:
            import_string(mcp.AUTH)
        except Exception as exc:  # an auth module may fail to import in any way
            messages.append(
                Error(
                    f"{SETTINGS_NAME}['AUTH'] = {mcp.AUTH!r} cannot be imported: {exc}",
                    hint="Give the dotted path of a django-ninja auth object or class.",
                    id="django_mcp.E003",
                )
            )
    if "*" in mcp.ALLOWED_ORIGINS and not settings.DEBUG:
        messages.append(
            checks.Warning(
                f"{SETTINGS_NAME}['ALLOWED_ORIGINS'] allows every Origin.",
                hint="List the origins of the browser clients you trust; '*' disables the DNS-rebinding defence.",
                id="django_mcp.W003",
            )
        )
    return messages


@register(Tags.database)
def check_sqlite(
    app_configs: Sequence[AppConfig] | None = None, databases: Sequence[str] | None = None, **kwargs: Any
) -> list[CheckMessage]:
    """W001: SQLite without ``transaction_mode: IMMEDIATE`` deadlocks concurrent writers."""
    messages: list[CheckMessage] = []
    for alias, db in settings.DATABASES.items():
        if db.get("ENGINE") == "django.db.backends.sqlite3":
            if db.get("OPTIONS", {}).get("transaction_mode") != "IMMEDIATE":
                messages.append(
                    checks.Warning(
                        f"Database {alias!r} is SQLite without transaction_mode 'IMMEDIATE'.",
                        hint=(
                            'Set OPTIONS = {"transaction_mode": "IMMEDIATE", "timeout": 20, '
                            '"init_command": "PRAGMA journal_mode=WAL;"} so concurrent '
                            "requests wait for the write lock instead of failing with 'database is locked'."
                        ),
                        obj=alias,
                        id="django_mcp.W001",
                    )
                )
    return messages


@register(Tags.compatibility)
def check_asgi(
    app_configs: Sequence[AppConfig] | None = None, databases: Sequence[str] | None = None, **kwargs: Any
) -> list[CheckMessage]:
    """W002: no ASGI_APPLICATION (a WSGI server serves the project); I002: ``runserver`` serves WSGI
    (no daphne in INSTALLED_APPS); E005: an ASGI_APPLICATION that cannot be imported (runserver would
    hang without listening)."""
    path = getattr(settings, "ASGI_APPLICATION", None)
    if path and "daphne" not in settings.INSTALLED_APPS:
        return [
            checks.Info(
                f"manage.py runserver serves WSGI ('daphne' is not in INSTALLED_APPS): {_UNDER_WSGI}",
                hint='Add "daphne" first in INSTALLED_APPS, or run the ASGI application with daphne or uvicorn.',
                id="django_mcp.I002",
            )
        ]
    if path:
        try:
            import_string(path)
        except Exception as exc:  # an asgi module may fail to import in any way
            return [
                Error(
                    f"ASGI_APPLICATION = {path!r} cannot be imported: {type(exc).__name__}: {exc}",
                    hint="Point it at the `application` of your project's asgi.py, e.g. 'mysite.asgi.application'.",
                    obj="ASGI_APPLICATION",
                    id="django_mcp.E005",
                )
            ]
        return []
    return [
        checks.Warning(
            f"ASGI_APPLICATION is not set, so a WSGI server serves the project: {_UNDER_WSGI}",
            hint='Add "daphne" first in INSTALLED_APPS and set ASGI_APPLICATION = "yourproject.asgi.application".',
            id="django_mcp.W002",
        )
    ]


_UNDER_WSGI = (
    "django-mcp then answers progress and log messages with the result instead of as they happen, runs "
    "task bodies only on the worker fleet (task_backend; a task_support='required' tool without one is "
    "refused), and refuses subscriptions/listen, the handshake-era GET stream and asking a handshake-era "
    "client mid-request (HTTP 501 / 405)."
)


@register(Tags.compatibility)
def check_channel_layer(
    app_configs: Sequence[AppConfig] | None = None, databases: Sequence[str] | None = None, **kwargs: Any
) -> list[CheckMessage]:
    """W004: no channel layer; W005: the in-memory layer outside DEBUG (one process only)."""
    layers = getattr(settings, "CHANNEL_LAYERS", {})
    if "default" not in layers:
        return [
            checks.Warning(
                "CHANNEL_LAYERS has no 'default' layer: subscriptions/listen carries no notifications and "
                "task cancel/input reach other processes only through the database.",
                hint='Use {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}} for one process, '
                "channels_redis.pubsub.RedisPubSubChannelLayer for several.",
                id="django_mcp.W004",
            )
        ]
    if layers["default"].get("BACKEND") == "channels.layers.InMemoryChannelLayer" and not settings.DEBUG:
        return [
            checks.Warning(
                "The in-memory channel layer only reaches listen streams and tasks of its own process.",
                hint="With several server processes use channels_redis.pubsub.RedisPubSubChannelLayer.",
                id="django_mcp.W005",
            )
        ]
    return []


@register(Tags.database)
def check_persistent_connections(
    app_configs: Sequence[AppConfig] | None = None, databases: Sequence[str] | None = None, **kwargs: Any
) -> list[CheckMessage]:
    """I001: CONN_MAX_AGE under ASGI keeps a connection per worker thread; prefer a pool."""
    return [
        checks.Info(
            f"Database {alias!r} sets CONN_MAX_AGE={db['CONN_MAX_AGE']} under ASGI.",
            hint="Persistent connections are per thread and ASGI runs many threads; on PostgreSQL use "
            'OPTIONS={"pool": True} with CONN_MAX_AGE=0.',
            obj=alias,
            id="django_mcp.I001",
        )
        for alias, db in settings.DATABASES.items()
        if db.get("CONN_MAX_AGE") and getattr(settings, "ASGI_APPLICATION", None)
    ]


@register(Tags.compatibility)
def check_servers(
    app_configs: Sequence[AppConfig] | None = None, databases: Sequence[str] | None = None, **kwargs: Any
) -> list[CheckMessage]:
    """E006: a tool option no extension of its server understands (or a bad value); plus each extension's checks."""
    messages: list[CheckMessage] = []
    for server in built_servers():
        tools = list(server.tools)
        claimed = {
            name: validator for plugin in server.extension_plugins for name, validator in plugin.tool_options.items()
        }
        for tool in tools:
            for option, value in tool.extension_options.items():
                validator = claimed.get(option)
                problem = None
                if validator is None:
                    problem = f"option {option}={value!r} is not understood by any extension installed on {server!r}"
                else:
                    try:
                        validator(value)
                    except ValueError as exc:
                        problem = f"option {option}: {exc}"
                if problem is not None:
                    messages.append(
                        Error(
                            f"Tool {tool.name!r}: {problem}.",
                            hint="Install the extension that provides this option in "
                            "McpServer(extension_plugins=[...]) (e.g. McpTasks() for task_support), "
                            "or fix the option's name.",
                            obj=tool.name,
                            id="django_mcp.E006",
                        )
                    )
        for plugin in server.extension_plugins:
            messages += plugin.check(tools)
    return messages


def built_servers() -> list[McpServer]:
    """The servers the URLconf builds (none if it cannot be imported: Django's own URL checks say why)."""
    try:
        get_resolver().url_patterns  # noqa: B018 - import the URLconf, which builds the servers
    except Exception:  # a URLconf may fail to import in any way
        return []
    return list(servers)


@register(Tags.urls)
def check_endpoint_paths(
    app_configs: Sequence[AppConfig] | None = None, databases: Sequence[str] | None = None, **kwargs: Any
) -> list[CheckMessage]:
    """W013: an endpoint served at ``/mcp/`` but not ``/mcp`` (or the reverse): clients posting to the other
    get Django's error page (with ``APPEND_SLASH``, a POST cannot be redirected). W018: an endpoint inside
    ``i18n_patterns()``: its URL changes with the language, and ``LocaleMiddleware`` redirects the rest."""
    messages: list[CheckMessage] = []
    for server in built_servers():
        try:
            path = reverse(f"{server.urls_namespace}:mcp_post")
        except NoReverseMatch:  # not mounted (or under a route with parameters)
            continue
        if get_language_from_path(path) is not None:
            messages.append(
                checks.Warning(
                    f"The MCP endpoint {server!r} is inside i18n_patterns() ({path!r}): its URL changes with the "
                    "language, and LocaleMiddleware answers a client that posts to another one with a redirect, "
                    "which MCP clients do not follow with their POST.",
                    hint="Mount it with mcp_path() in the urlpatterns outside i18n_patterns(), as an API is.",
                    obj=server.urls_namespace,
                    id="django_mcp.W018",
                )
            )
        if path == "/":
            continue  # at the site's root: there is no other form
        other = path[:-1] if path.endswith("/") else f"{path}/"
        try:
            served = resolve(other).namespace == server.urls_namespace
        except Resolver404:
            served = False
        if not served:
            route = path.strip("/")
            arguments = f'"{route}"' if server.urls_namespace == "django_mcp" else f'"{route}", server'
            messages.append(
                checks.Warning(
                    f"The MCP endpoint {server!r} is served at {path!r} but not at {other!r}: a client given "
                    f"{other!r} gets Django's HTML error page, not a JSON-RPC answer.",
                    hint=f'Mount it with mcp_path({arguments}) (or path("{route}", ...) without the trailing slash), '
                    "which serves both.",
                    obj=server.urls_namespace,
                    id="django_mcp.W013",
                )
            )
    return messages


@register(Tags.caches)
def check_session_cache(
    app_configs: Sequence[AppConfig] | None = None, databases: Sequence[str] | None = None, **kwargs: Any
) -> list[CheckMessage]:
    """W007: handshake-era sessions in a per-process cache outside DEBUG (another worker would not know them)."""
    try:
        mcp = validate_settings()
    except Exception:  # reported by E001/E002
        return []
    backend = getattr(settings, "CACHES", {}).get(mcp.SESSION_CACHE, {}).get("BACKEND", "")
    if not mcp.handshake_versions or settings.DEBUG or not backend.endswith("LocMemCache"):
        return []
    return [
        checks.Warning(
            f"Handshake-era sessions live in the per-process cache {mcp.SESSION_CACHE!r} ({backend}).",
            hint="With several server processes use a shared cache (Redis, database) for "
            f"{SETTINGS_NAME}['SESSION_CACHE'], or one process only.",
            obj=mcp.SESSION_CACHE,
            id="django_mcp.W007",
        )
    ]


@register(Tags.caches)
def check_rate_limit_cache(
    app_configs: Sequence[AppConfig] | None = None, databases: Sequence[str] | None = None, **kwargs: Any
) -> list[CheckMessage]:
    """E017: rate limits counted in a cache that does not exist; W017: outside DEBUG, in a per-process one.

    django-ratelimit counts in the cache its ``RATELIMIT_USE_CACHE`` setting names (default ``"default"``).
    """
    try:
        mcp = validate_settings()
    except Exception:  # reported by E001/E002
        return []
    limited = mcp.RATE_LIMIT is not None or any(
        tool.rate_limit is not None for server in built_servers() for tool in server.tools
    )
    if not limited:
        return []
    caches_setting = getattr(settings, "CACHES", {})
    alias = getattr(settings, "RATELIMIT_USE_CACHE", "default")  # django-ratelimit's setting
    if alias not in caches_setting:
        return [
            Error(
                f"Rate limits are counted in the cache {alias!r} (RATELIMIT_USE_CACHE), which CACHES does not define.",
                hint=f"Set RATELIMIT_USE_CACHE to one of {sorted(caches_setting)}.",
                id="django_mcp.E017",
            )
        ]
    backend = caches_setting[alias].get("BACKEND", "")
    if settings.DEBUG or not backend.endswith(("LocMemCache", "DummyCache")):
        return []
    return [
        checks.Warning(
            f"Rate limits are counted in the per-process cache {alias!r} ({backend}): with several server "
            "processes each counts on its own, and a caller gets the limit once per process.",
            hint="Point RATELIMIT_USE_CACHE (django-ratelimit's setting) at a shared cache (Redis).",
            obj=alias,
            id="django_mcp.W017",
        )
    ]


@register(Tags.caches)
def check_session_cache_size(
    app_configs: Sequence[AppConfig] | None = None, databases: Sequence[str] | None = None, **kwargs: Any
) -> list[CheckMessage]:
    """W014: outside DEBUG, a session cache that culls entries (``MAX_ENTRIES``) before it holds
    ``SESSIONS_MAX`` sessions: a flood would evict live sessions."""
    try:
        mcp = validate_settings()
    except Exception:  # reported by E001/E002
        return []
    config = getattr(settings, "CACHES", {}).get(mcp.SESSION_CACHE, {})
    backend = config.get("BACKEND", "")
    culls = backend.rsplit(".", 1)[-1] in ("LocMemCache", "FileBasedCache", "DatabaseCache")
    if not mcp.handshake_versions or settings.DEBUG or not culls:
        return []
    entries = int(config.get("OPTIONS", {}).get("MAX_ENTRIES", 300))
    # Two TTL windows of new sessions, plus a list per principal and the window counters.
    needed = 2 * mcp.SESSIONS_MAX + 2 if mcp.SESSIONS_MAX is not None else None
    if needed is not None and entries >= 2 * needed:
        return []
    wanted = f"at least {2 * needed}" if needed is not None else "a bound (SESSIONS_MAX)"
    return [
        checks.Warning(
            f"The session cache {mcp.SESSION_CACHE!r} culls past {entries} entries ({backend}): a flood of "
            "initialize requests would evict live sessions.",
            hint=f"Give it OPTIONS['MAX_ENTRIES'] {wanted}, lower {SETTINGS_NAME}['SESSIONS_MAX'], or use Redis.",
            obj=mcp.SESSION_CACHE,
            id="django_mcp.W014",
        )
    ]


@register(Tags.security)
def check_allowed_hosts(
    app_configs: Sequence[AppConfig] | None = None, databases: Sequence[str] | None = None, **kwargs: Any
) -> list[CheckMessage]:
    """W008: ``ALLOWED_HOSTS`` accepts any host outside DEBUG and ``ALLOWED_ORIGINS`` lists no origin.

    The same-origin rule compares the Origin with the Host header; with ``"*"`` a DNS-rebinding page
    chooses both, so django-mcp then trusts listed origins only (``views.origin_allowed``).
    """
    if settings.DEBUG or "*" not in getattr(settings, "ALLOWED_HOSTS", []):
        return []
    try:
        mcp = validate_settings()
    except Exception:  # reported by E001/E002
        return []
    if mcp.ALLOWED_ORIGINS:  # explicit origins, or "*" (check W003)
        return []
    return [
        checks.Warning(
            "ALLOWED_HOSTS contains '*': the Host header is whatever the client sends, so a browser request "
            "cannot be told same-origin (a DNS-rebinding page chooses both Origin and Host). django-mcp refuses "
            f"every request with an Origin header (403) unless {SETTINGS_NAME}['ALLOWED_ORIGINS'] lists it.",
            hint="List your domains in ALLOWED_HOSTS, or the origins of the browser clients you trust in "
            f"{SETTINGS_NAME}['ALLOWED_ORIGINS'] (e.g. ['https://app.example.com']). Clients that send no "
            "Origin (SDKs, CLIs, servers) are not affected.",
            obj="ALLOWED_HOSTS",
            id="django_mcp.W008",
        )
    ]
