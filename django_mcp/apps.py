from __future__ import annotations

from django.apps import AppConfig
from django.conf import settings
from django.utils.autoreload import autoreload_started


class DjangoMcpConfig(AppConfig):
    name = "django_mcp"
    label = "django_mcp"  # frozen: migrations refer to it
    verbose_name = "MCP server"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Here, not at the top: these modules import models, which need the app registry ready.
        from . import checks, database_checks  # noqa: F401  (register the core's system checks)
        from .audit import follow_settings
        from .auth import cache as auth_cache
        from .auth import checks as auth_checks  # noqa: F401  (sign-in's checks and OAUTH_* settings)
        from .tasks import checks as task_checks  # noqa: F401  (the tasks extension's checks and settings)

        auth_cache.watch()
        follow_settings()
        _watch_autoreloader()
        _register_celery_task()


def _register_celery_task() -> None:
    """With a ``CeleryBackend`` in ``TASKS``, register the Celery task its workers run (a worker sets Django
    up, but never builds the Django Tasks backends, whose module would register it)."""
    for config in (getattr(settings, "TASKS", None) or {}).values():
        if str(config.get("BACKEND", "")).startswith("django_mcp.tasks.celery_backend."):
            from .tasks import celery_backend  # noqa: F401  (its @shared_task)

            return


def _watch_autoreloader() -> None:
    """Graceful shutdown under ``manage.py runserver`` with its autoreloader (the server runs in a thread)."""
    # Here: the server package loads when the app is ready, not when Django first imports this module.
    from .server.lifecycle import lifecycle

    def chain(sender: object, **kwargs: object) -> None:
        lifecycle.chain_from_main_thread()

    autoreload_started.connect(chain, weak=False, dispatch_uid="django_mcp.graceful_shutdown")
