"""A Django Tasks backend on Celery: task bodies of the worker fleet run on a project's Celery workers.

``settings.py``::

    TASKS = {
        "default": {"BACKEND": "django.tasks.backends.immediate.ImmediateBackend"},
        "celery": {
            "BACKEND": "django_mcp.tasks.celery_backend.CeleryBackend",
            "QUEUES": ["mcp"],
            "OPTIONS": {"APP": "proj.celery.app"},  # default: Celery's current app
        },
    }

and ``McpTasks(task_backend="celery", task_queue="mcp")``. The worker::

    celery -A proj worker -Q mcp --pool threads --concurrency 32

Each job is a Celery message naming the Django Tasks task (its module path) and its arguments; the
worker's Celery task :data:`RUN_TASK` imports it and calls it. Use the ``threads`` (or ``solo``) pool:
a task body is a thread waiting on its own event loop, and a SIGKILL of the worker must take its bodies
with it (their leases then lapse and the tasks fail as interrupted), which prefork's children survive.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from celery import Celery, current_app, shared_task
from django.utils import timezone
from django.utils.module_loading import import_string

from .fleet import tasks_framework

__all__ = ["RUN_TASK", "CeleryBackend", "run_django_task"]

RUN_TASK = "django_mcp.run_django_task"
"""The name of the Celery task a worker runs a Django Tasks job with."""

_framework = tasks_framework()  # django.tasks, or on Django 5.2 the django_tasks backport
_BaseTaskBackend: Any = import_module(f"{_framework.__name__}.backends.base").BaseTaskBackend
_task_enqueued: Any = import_module(f"{_framework.__name__}.signals").task_enqueued


class CeleryBackend(_BaseTaskBackend):  # type: ignore[misc]
    """Enqueue Django Tasks jobs as Celery messages on the task's queue (``QUEUES``; Celery's own routing
    when the task names none). ``OPTIONS["APP"]``: the dotted path of the Celery app (default: current)."""

    supports_defer = True  # Celery's eta
    supports_async_task = True  # the worker runs an async function to completion
    supports_get_result = False  # results stay in the MCP task's row
    supports_priority = False

    def __init__(self, alias: str, params: dict[str, Any]) -> None:
        super().__init__(alias, params)
        app_path = (params.get("OPTIONS") or {}).get("APP")
        self._app_path: str | None = app_path

    @property
    def app(self) -> Celery:
        return import_string(self._app_path) if self._app_path else current_app

    def enqueue(self, task: Any, args: Any, kwargs: Any) -> Any:
        self.validate_task(task)
        sent = self.app.send_task(
            RUN_TASK,
            args=[task.module_path, list(args), dict(kwargs)],
            queue=task.queue_name or None,
            eta=task.run_after,
        )
        result = _framework.TaskResult(
            task=task,
            id=str(sent.id),
            status=_framework.TaskResultStatus.READY,
            enqueued_at=timezone.now(),
            started_at=None,
            last_attempted_at=None,
            finished_at=None,
            args=list(args),
            kwargs=dict(kwargs),
            backend=self.alias,
            errors=[],
            worker_ids=[],
        )
        _task_enqueued.send(type(self), task_result=result)
        return result


@shared_task(name=RUN_TASK, ignore_result=True)  # type: ignore[untyped-decorator]  # (celery: no types)
def run_django_task(module_path: str, args: list[Any], kwargs: dict[str, Any]) -> None:
    """On a Celery worker: run the Django Tasks task at ``module_path`` with its arguments."""
    import_string(module_path).call(*args, **kwargs)
