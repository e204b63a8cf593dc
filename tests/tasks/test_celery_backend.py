"""``CeleryBackend``: Django Tasks jobs as Celery messages, and the Celery task a worker runs them with.

tests/live/test_fleet_celery.py runs the fleet on real Celery workers (RabbitMQ and Redis as brokers).
"""

from __future__ import annotations

from datetime import timedelta
from types import SimpleNamespace
from typing import Any

import pytest
from django.utils import timezone

pytest.importorskip("celery")

from django_mcp.tasks.celery_backend import RUN_TASK, CeleryBackend, run_django_task
from django_mcp.tasks.fleet import get_run_mcp_task, tasks_framework
from tests.celery_app import app

CELERY = {"BACKEND": "django_mcp.tasks.celery_backend.CeleryBackend", "QUEUES": ["mcp"]}
RAN: list[Any] = []


@tasks_framework().task(backend="default")
def remember(value: int) -> None:
    RAN.append(value * 2)


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, dict[str, Any]]]:
    messages: list[tuple[str, dict[str, Any]]] = []

    def send_task(name: str, **options: Any) -> SimpleNamespace:
        messages.append((name, options))
        return SimpleNamespace(id=f"celery-{len(messages)}")

    monkeypatch.setattr(app, "send_task", send_task)
    return messages


@pytest.fixture
def celery_backend(settings: Any) -> None:
    settings.TASKS = {**settings.TASKS, "celery": {**CELERY, "OPTIONS": {"APP": "tests.celery_app.app"}}}


@pytest.mark.usefixtures("celery_backend")
def test_the_fleet_job_goes_to_its_queue_as_one_message(sent: list) -> None:
    result = get_run_mcp_task().using(backend="celery", queue_name="mcp").enqueue("a-task", "mcp_fleet")
    assert sent == [
        (
            RUN_TASK,
            {"args": ["django_mcp.tasks.fleet.run_mcp_task", ["a-task", "mcp_fleet"], {}], "queue": "mcp", "eta": None},
        )
    ]
    assert (result.id, result.backend, result.args) == ("celery-1", "celery", ["a-task", "mcp_fleet"])
    assert result.status == tasks_framework().TaskResultStatus.READY


@pytest.mark.usefixtures("celery_backend")
def test_a_deferred_job_carries_its_eta(sent: list) -> None:
    when = timezone.now() + timedelta(minutes=5)
    get_run_mcp_task().using(backend="celery", queue_name="mcp", run_after=when).enqueue("a-task", "ns")
    assert sent[0][1]["eta"] == when


def test_without_an_app_the_backend_sends_through_celerys_current_app(sent: list) -> None:
    app.set_current()
    backend = CeleryBackend("celery", {**CELERY, "OPTIONS": {}})
    assert backend.app._get_current_object() is app  # (current_app is a proxy)


@pytest.mark.usefixtures("celery_backend")
def test_a_queue_the_backend_does_not_list_is_refused(sent: list) -> None:
    with pytest.raises(Exception, match="(?i)queue .elsewhere. is not valid"):
        get_run_mcp_task().using(backend="celery", queue_name="elsewhere").enqueue("a-task", "ns")
    assert sent == []


def test_the_worker_runs_the_django_task_the_message_names() -> None:
    RAN.clear()
    run_django_task(remember.module_path, [21], {})
    assert RAN == [42]
