"""Health for load balancers: ``live`` (the process answers) and ``ready`` (it can serve).

Mount with ``path("health/", include("django_mcp.health"))``: ``/health/live`` and
``/health/ready``. ``manage.py mcp_health`` runs the same readiness checks. Answers name each check
and whether it passed, never a host, a driver's message or a setting's value.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, TypeVar

from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from django.db import connections
from django.http import HttpRequest, JsonResponse
from django.urls import path
from django.utils import timezone

from .compat import mark_logged
from .decorators import client_endpoint
from .endpoint import servers
from .server.notify import has_channel_layer
from .tasks.conf import get_tasks_settings
from .tasks.store.database import tasks_database
from .tasks.store.reports import oldest_unclaimed_fleet_task

T = TypeVar("T")
CHECK_TIMEOUT_SECONDS = 2.0
"""How long one check may take before it counts as failed (a load balancer's probe must not hang)."""


@dataclass(frozen=True)
class Check:
    """One readiness check: its name, whether it passed, how long it took, and a word on what failed."""

    name: str
    ok: bool
    ms: float
    detail: str = ""

    def to_json(self) -> dict[str, Any]:
        shown: dict[str, Any] = {"ok": self.ok, "ms": round(self.ms, 1)}
        if self.detail:
            shown["detail"] = self.detail
        return shown


async def _atimed(name: str, check: Any) -> Check:
    started = time.monotonic()
    try:
        async with asyncio.timeout(CHECK_TIMEOUT_SECONDS):
            detail = await check()
    except TimeoutError:
        return Check(name, False, (time.monotonic() - started) * 1000, f"no answer within {CHECK_TIMEOUT_SECONDS:g} s")
    except Exception:  # what failed is the check's answer; its text may name hosts: not shown
        return Check(name, False, (time.monotonic() - started) * 1000, "unreachable")
    return Check(name, detail is None, (time.monotonic() - started) * 1000, detail or "")


def _in_worker_thread(query: Callable[[], T]) -> Callable[[], T]:
    """``query`` for a thread of asgiref's pool: the thread's connection is closed after it (a pooled one
    goes back to its pool), as Django does at the end of a request."""

    def run() -> T:
        try:
            return query()
        finally:
            connections[tasks_database()].close()

    return run


def _ping_database() -> None:
    with connections[tasks_database()].cursor() as cursor:
        cursor.execute("SELECT 1")


async def _adatabase() -> str | None:
    await sync_to_async(_in_worker_thread(_ping_database), thread_sensitive=False)()
    return None


async def _achannel_layer() -> str | None:
    layer = get_channel_layer()
    if layer is None:
        return None
    channel = await layer.new_channel()
    await layer.send(channel, {"type": "django_mcp.health"})
    await layer.receive(channel)
    return None


def _oldest_queued_seconds() -> float | None:
    oldest = oldest_unclaimed_fleet_task()
    return (timezone.now() - oldest).total_seconds() if oldest is not None else None


async def _afleet() -> str | None:
    """Whether fleet workers claim work: no task waits unclaimed past ``TASK_QUEUED_TIMEOUT_SECONDS``."""
    waited = await sync_to_async(_in_worker_thread(_oldest_queued_seconds), thread_sensitive=False)()
    limit = get_tasks_settings().TASK_QUEUED_TIMEOUT_SECONDS or timedelta(minutes=10).total_seconds()
    if waited is not None and waited > limit:
        return f"a task has waited {waited:.0f} s for a worker"
    return None


def _fleet_configured() -> bool:
    for server in list(servers):
        for plugin in server.extension_plugins:
            if getattr(plugin, "task_backend", None) or any(
                tool.extension_options.get("task_backend") for tool in server.tools
            ):
                return True
    return False


async def areadiness() -> tuple[bool, list[Check]]:
    """Run the readiness checks concurrently: the database, the channel layer and (when configured) the fleet."""
    checks = [_atimed("database", _adatabase)]
    if has_channel_layer():
        checks.append(_atimed("channel_layer", _achannel_layer))
    if _fleet_configured():
        checks.append(_atimed("fleet", _afleet))
    done = list(await asyncio.gather(*checks))
    return all(check.ok for check in done), done


async def live(request: HttpRequest) -> JsonResponse:
    """The process answers: nothing else is checked (a restart would not mend the database)."""
    return JsonResponse({"status": "ok"})


async def ready(request: HttpRequest) -> JsonResponse:
    """200 when every check passes, else 503; each check with its time and, when it failed, why."""
    ok, checks = await areadiness()
    body = {"status": "ok" if ok else "unavailable", "checks": {check.name: check.to_json() for check in checks}}
    response = JsonResponse(body, status=200 if ok else 503)
    if not ok:
        mark_logged(response)  # a probe every few seconds: no log line each
    return response


app_name = "django_mcp_health"
urlpatterns = [
    path("live", client_endpoint(live), name="live"),
    path("ready", client_endpoint(ready), name="ready"),
]
