"""The admin's task monitor: what runs, what is stuck, what fails, at a glance (server-rendered)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.utils import timezone

from .conf import get_tasks_settings
from .models import ACTIVE, TERMINAL, TaskStatus
from .store.monitor import Minute, Snapshot, servers, snapshot

if TYPE_CHECKING:
    from django.contrib.admin import ModelAdmin

WINDOW = timedelta(hours=1)
CHART_HEIGHT = 80
BAR_WIDTH = 8


@dataclass(frozen=True)
class Bar:
    """One minute of the chart, as SVG geometry: created (outline) and what ended, stacked."""

    x: int
    minute: Minute
    created_y: int
    created_height: int
    stack: list[tuple[str, int, int]]  # (status, y, height), bottom up


def chart(minutes: list[Minute]) -> tuple[list[Bar], int]:
    """The bars of the per-minute chart and the count its full height stands for."""
    peak = max([1, *(max(m.created, m.completed + m.failed + m.cancelled) for m in minutes)])
    bars = []
    for i, minute in enumerate(minutes):
        stack, bottom = [], CHART_HEIGHT
        for status in ("completed", "failed", "cancelled"):
            height = round(getattr(minute, status) * CHART_HEIGHT / peak)
            if height:
                bottom -= height
                stack.append((status, bottom, height))
        created = round(minute.created * CHART_HEIGHT / peak)
        bars.append(Bar(i * BAR_WIDTH, minute, CHART_HEIGHT - created, created, stack))
    return bars, peak


def monitor_view(model_admin: ModelAdmin[Any], request: HttpRequest) -> HttpResponse:
    """The monitor page: for staff who may view tasks; ``?server=`` narrows it to one server."""
    if not model_admin.has_view_permission(request):
        raise PermissionDenied
    known = servers()
    chosen = request.GET.get("server")
    scope = chosen if chosen in known else None
    figures: Snapshot = snapshot(timezone.now(), WINDOW, scope, get_tasks_settings().TASK_QUEUED_TIMEOUT_SECONDS)
    bars, peak = chart(figures.minutes)
    context = {
        **model_admin.admin_site.each_context(request),
        "title": "Task monitor",
        "opts": model_admin.opts,
        "servers": known,
        "server": scope,
        "figures": figures,
        "active": [(label, figures.active.get(value, 0)) for value, label in TaskStatus.choices if value in ACTIVE],
        "finished": [
            (label, figures.finished.get(value, 0)) for value, label in TaskStatus.choices if value in TERMINAL
        ],
        "bars": bars,
        "peak": peak,
        "chart_width": len(bars) * BAR_WIDTH,
        "chart_height": CHART_HEIGHT,
        "bar_width": BAR_WIDTH - 1,
    }
    return TemplateResponse(request, "admin/django_mcp/task/monitor.html", context)
