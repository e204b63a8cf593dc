"""The tasks extension's system checks (IDs share the ``django_mcp`` namespace and are never reused)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

from django.apps import AppConfig, apps
from django.conf import settings
from django.core.checks import CheckMessage, Error, Tags, register
from django.core.checks import Warning as CheckWarning
from django.db import DatabaseError, connections, router
from django.db.migrations.executor import MigrationExecutor
from pydantic import ValidationError

from ..conf import SETTINGS_NAME
from .conf import get_tasks_settings
from .models import Task

if TYPE_CHECKING:
    from ..server.tools.definition import Tool


class FleetOptions(Protocol):
    """What the checks read of a :class:`~.plugin.McpTasks`: its server and where its bodies are enqueued."""

    namespace: str
    task_backend: str | None
    task_queue: str


@register(Tags.compatibility)
def check_task_settings(
    app_configs: Sequence[AppConfig] | None = None, databases: Sequence[str] | None = None, **kwargs: Any
) -> list[CheckMessage]:
    """E004: leases renewed no faster than they lapse."""
    try:
        tasks = get_tasks_settings()
    except (ValidationError, Exception):  # reported by the core's settings check (E001/E002)
        return []
    if tasks.TASK_LEASE_RENEW_SECONDS < tasks.TASK_LEASE_SECONDS:
        return []
    return [
        Error(
            f"{SETTINGS_NAME}['TASK_LEASE_RENEW_SECONDS'] ({tasks.TASK_LEASE_RENEW_SECONDS}) must be shorter than "
            f"TASK_LEASE_SECONDS ({tasks.TASK_LEASE_SECONDS}).",
            hint="Renew leases well within their length (e.g. a third of it), or live tasks are failed as orphans.",
            id="django_mcp.E004",
        )
    ]


_PSYCOPG_POOL_TIMEOUT = 30.0  # psycopg_pool's default wait for a connection


@register(Tags.compatibility)
def check_lease_outlasts_reconnection(
    app_configs: Sequence[AppConfig] | None = None, databases: Sequence[str] | None = None, **kwargs: Any
) -> list[CheckMessage]:
    """W022: a lease shorter than a live owner may need to renew it once the database is back: up to a renew
    interval before it tries, then the wait for a connection (the pool's ``timeout``, ``connect_timeout``).
    Meanwhile a process that got its connection first sees the lease lapse and fails the task as orphaned."""
    try:
        tasks = get_tasks_settings()
    except (ValidationError, Exception):  # reported by the core's settings check (E001/E002)
        return []

    alias = router.db_for_write(Task)
    database = settings.DATABASES.get(alias) or {}
    options = database.get("OPTIONS") or {}
    waits = {"TASK_LEASE_RENEW_SECONDS": tasks.TASK_LEASE_RENEW_SECONDS}
    pool, engine = options.get("pool"), str(database.get("ENGINE", ""))
    if pool and ("postgresql" in engine or "postgis" in engine):
        waits["the pool's timeout"] = (pool if isinstance(pool, dict) else {}).get("timeout", _PSYCOPG_POOL_TIMEOUT)
    waits["connect_timeout"] = options.get("connect_timeout", 0)
    try:
        needed = sum(float(seconds) for seconds in waits.values())
    except (TypeError, ValueError):  # the database driver reports those itself
        return []
    if tasks.TASK_LEASE_SECONDS > needed:
        return []
    said = " + ".join(f"{name} ({float(seconds):g} s)" for name, seconds in waits.items() if float(seconds))
    return [
        CheckWarning(
            f"{SETTINGS_NAME}['TASK_LEASE_SECONDS'] ({tasks.TASK_LEASE_SECONDS:g} s) is not longer than a live "
            f"process may need to renew a lease once database {alias!r} is back from an outage: {said}. Another "
            "process may then fail its running tasks as orphans ('Task owner stopped').",
            hint=f"Make TASK_LEASE_SECONDS longer than {needed:g} s (the default 15 s is, with the pool options "
            "docs/deployment.md gives), or shorten the waits.",
            obj=alias,
            id="django_mcp.W022",
        )
    ]


@register(Tags.database, deploy=True)
def check_migrations_applied(
    app_configs: Sequence[AppConfig] | None = None, databases: Sequence[str] | None = None, **kwargs: Any
) -> list[CheckMessage]:
    """E009: the tasks' migrations not all applied (``check --deploy --database ALIAS``; ``migrate`` skips it),
    or those of the app of a database-backed ``TASKS`` backend the fleet enqueues on (``django_tasks_db``)."""
    alias = router.db_for_write(Task)
    if alias not in (databases or ()):
        return []
    labels = ["django_mcp", *_backend_app_labels()]
    try:
        executor = MigrationExecutor(connections[alias])
        leaves = [node for node in executor.loader.graph.leaf_nodes() if node[0] in labels]
        plan = executor.migration_plan(leaves)
    except DatabaseError:  # unreachable: Django's own checks and the first request say so
        return []
    messages: list[CheckMessage] = []
    for label in labels:
        pending = [migration.name for migration, _ in plan if migration.app_label == label]
        if not pending:
            continue
        what = (
            "task requests would answer 'the task tables are missing or out of date'"
            if label == "django_mcp"
            else "the worker fleet could not enqueue a task body (a 503 for every fleet task)"
        )
        messages.append(
            Error(
                f"Database {alias!r} lacks {label} migrations {', '.join(pending)}: {what}.",
                hint="Run `python manage.py migrate` (with --database if the tasks live elsewhere).",
                obj=alias,
                id="django_mcp.E009",
            )
        )
    return messages


def _backend_app_labels() -> list[str]:
    """The app labels of installed apps whose models a ``TASKS`` backend keeps its jobs in."""
    labels = []
    for config in (getattr(settings, "TASKS", None) or {}).values():
        module = str(config.get("BACKEND", "")).rpartition(".")[0]
        app = apps.get_containing_app_config(module) if module else None
        if app is not None and app.label != "django_mcp" and app.models_module is not None:
            labels.append(app.label)
    return list(dict.fromkeys(labels))


def check_plugin(plugin: FleetOptions, tools: list[Tool]) -> list[CheckMessage]:
    """W006: tasks without a channel layer (cancel, input and pushes then wait for the database).

    With a worker fleet (``task_backend``): E008, W009, W010 (:func:`check_fleet`). W012: :func:`check_routing`.
    """
    messages = check_fleet(plugin, tools) + check_routing(plugin)
    if "default" in getattr(settings, "CHANNEL_LAYERS", {}):
        return messages
    return messages + [
        CheckWarning(
            f"McpTasks on server {plugin.namespace!r} has no channel layer: tasks/cancel and tasks/update reach a "
            "running task only at its next lease renewal, and listen streams get no task notifications.",
            hint='Set CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}} for one '
            "process, channels_redis.pubsub.RedisPubSubChannelLayer for several.",
            obj=plugin.namespace,
            id="django_mcp.W006",
        )
    ]


def check_routing(plugin: FleetOptions) -> list[CheckMessage]:
    """W012: the database router reads tasks from another database than it writes them to."""
    read, write = router.db_for_read(Task), router.db_for_write(Task)
    if read == write:
        return []
    return [
        CheckWarning(
            f"McpTasks on server {plugin.namespace!r}: the database router reads tasks from {read!r} but writes "
            f"them to {write!r}. tasks/get and listen snapshots read there, so a replica that lags answers "
            "'unknown task' for a task created a moment ago, and shows a finished one still working.",
            hint="Route the django_mcp app to one database for reads and writes (db_for_read returning the same "
            "alias as db_for_write for app_label 'django_mcp').",
            obj=plugin.namespace,
            id="django_mcp.W012",
        )
    ]


_LOCAL_BACKENDS = ("ImmediateBackend", "DummyBackend")
_IN_MEMORY_LAYER = "InMemoryChannelLayer"


def fleet_backends(plugin: FleetOptions, tools: list[Tool]) -> dict[str, list[str]]:
    """The ``TASKS`` aliases task bodies of ``plugin``'s server are enqueued on, each with what names it."""
    used: dict[str, list[str]] = {}
    if plugin.task_backend:
        used.setdefault(plugin.task_backend, []).append("McpTasks(task_backend=...)")
    for tool in tools:
        alias = tool.extension_options.get("task_backend")
        if isinstance(alias, str) and alias:
            used.setdefault(alias, []).append(f"tool {tool.name!r}")
    return used


def check_fleet(plugin: FleetOptions, tools: list[Tool]) -> list[CheckMessage]:
    """E008: a task backend missing from TASKS (or the queue not among its QUEUES); W009: an Immediate
    or Dummy backend outside DEBUG; W010: a task backend without a channel layer shared by processes."""
    used = fleet_backends(plugin, tools)
    if not used:
        return []
    messages: list[CheckMessage] = []
    configured = getattr(settings, "TASKS", None) or {}
    for alias, users in sorted(used.items()):
        named = ", ".join(users)
        options = configured.get(alias)
        if not isinstance(options, dict):
            messages.append(
                Error(
                    f"McpTasks on server {plugin.namespace!r}: task backend {alias!r} ({named}) is not in the "
                    "TASKS setting.",
                    hint="Add it to TASKS (e.g. a django_tasks_db.DatabaseBackend), or name a configured alias.",
                    obj=plugin.namespace,
                    id="django_mcp.E008",
                )
            )
            continue
        queues = list(options.get("QUEUES", ["default"]))
        if queues and plugin.task_queue not in queues:
            messages.append(
                Error(
                    f"McpTasks on server {plugin.namespace!r}: queue {plugin.task_queue!r} is not among the QUEUES "
                    f"of task backend {alias!r} ({', '.join(map(str, queues))}).",
                    hint=f'Add {plugin.task_queue!r} to TASKS["{alias}"]["QUEUES"], or set McpTasks(task_queue=...).',
                    obj=plugin.namespace,
                    id="django_mcp.E008",
                )
            )
        backend_path = str(options.get("BACKEND", ""))
        if backend_path.endswith(_LOCAL_BACKENDS) and not settings.DEBUG:
            messages.append(
                CheckWarning(
                    f"McpTasks on server {plugin.namespace!r}: task backend {alias!r} is "
                    f"{backend_path.rsplit('.', 1)[-1]}: task bodies run inside the web request that creates "
                    "them (Immediate) or never (Dummy).",
                    hint="Use a backend with workers (django_tasks_db.DatabaseBackend, django_tasks_rq.RQBackend), "
                    "or leave task_backend unset to run bodies in the web process.",
                    obj=plugin.namespace,
                    id="django_mcp.W009",
                )
            )
    layer = (getattr(settings, "CHANNEL_LAYERS", None) or {}).get("default")
    layer_backend = str(layer.get("BACKEND", "")) if isinstance(layer, dict) else ""
    if layer is None or layer_backend.endswith(_IN_MEMORY_LAYER):
        messages.append(
            CheckWarning(
                f"McpTasks on server {plugin.namespace!r} runs task bodies on workers "
                f"({', '.join(sorted(used))}) without a channel layer shared by processes: a worker gets "
                "tasks/cancel and tasks/update answers only at its next lease renewal.",
                hint="Set CHANNEL_LAYERS to channels_redis.pubsub.RedisPubSubChannelLayer for web and worker "
                "processes.",
                obj=plugin.namespace,
                id="django_mcp.W010",
            )
        )
    return messages
