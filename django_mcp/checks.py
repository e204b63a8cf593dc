"""System checks (``manage.py check``). IDs are stable and never reused; see the README."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.apps import AppConfig
from django.conf import settings
from django.core import checks
from django.core.checks import CheckMessage, Error, Tags, register
from django.utils.module_loading import import_string
from pydantic import ValidationError

from .conf import SETTINGS_NAME, validate_settings


@register(Tags.compatibility)
def check_settings(
    app_configs: Sequence[AppConfig] | None = None, databases: Sequence[str] | None = None, **kwargs: Any
) -> list[CheckMessage]:
    """E001 not a dict; E002 an invalid or unknown key; E003 AUTH not importable; W003 any Origin in production."""
    try:
        mcp = validate_settings()
    except TypeError as exc:
        return [Error(str(exc), hint=f"Set {SETTINGS_NAME} = {{...}}.", id="django_mcp.E001")]
    except ValidationError as exc:
        return [
            Error(
                f"{SETTINGS_NAME}[{'.'.join(str(p) for p in err['loc'])!r}]: {err['msg']}",
                hint="See the settings reference in django-mcp's README.",
                obj=SETTINGS_NAME,
                id="django_mcp.E002",
            )
            for err in exc.errors()
        ]
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
    if mcp.TASK_LEASE_RENEW_SECONDS >= mcp.TASK_LEASE_SECONDS:
        messages.append(
            Error(
                f"{SETTINGS_NAME}['TASK_LEASE_RENEW_SECONDS'] ({mcp.TASK_LEASE_RENEW_SECONDS}) must be shorter than "
                f"TASK_LEASE_SECONDS ({mcp.TASK_LEASE_SECONDS}).",
                hint="Renew leases well within their length (e.g. a third of it), or live tasks are failed as orphans.",
                id="django_mcp.E004",
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
    """W002: without ASGI there is no SSE streaming and no cancellation on disconnect."""
    if getattr(settings, "ASGI_APPLICATION", None):
        return []
    return [
        checks.Warning(
            "ASGI_APPLICATION is not set: django-mcp needs an ASGI server for SSE responses and cancellation.",
            hint='Add "daphne" first in INSTALLED_APPS and set ASGI_APPLICATION = "yourproject.asgi.application".',
            id="django_mcp.W002",
        )
    ]


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
