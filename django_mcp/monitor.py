"""The admin's task monitor: what runs, what is stuck, what fails, and with the audit log on, who calls what.

A page of its own in the admin (a proxy of ``Task`` gives it its place on the admin index), for staff who
may view tasks; server-rendered, its chart an SVG.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial
from typing import Any, TypeVar, cast

from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from django.core.handlers.wsgi import WSGIRequest
from django.db.models import Count, Q
from django.http import HttpRequest, HttpResponse, HttpResponseBase, HttpResponseForbidden, StreamingHttpResponse
from django.utils import timezone

from .audit import ToolCall
from .conf import get_settings
from .decorators import outside_atomic_requests
from .pooled import give_back_pooled_connections
from .server.listen import open_listen_streams
from .shared_caches import shared_cache
from .tasks.conf import get_tasks_settings
from .tasks.models import ACTIVE, TERMINAL, Task, TaskStatus
from .tasks.monitoring import MONITOR_GROUP, VIEWERS_KEY, feed
from .tasks.store.monitor import Minute, Snapshot, servers, snapshot

WINDOW = timedelta(hours=1)
KEEPALIVE_SECONDS = 10.0
"""A live monitor's stream writes a comment this often when nothing changed, and marks itself open again."""
OPEN_MARK_SECONDS = 30.0
"""How long an open monitor's mark holds without being renewed (a stream that died stops renewing it)."""
SHARED_KEY = "django_mcp:monitor:shared"
FRESH_SECONDS = 2.0
"""Every viewer of a monitor gets the same figures for this long: the database is read once for them all."""
HELD_SECONDS = 120.0
"""How long the shared cache holds figures past their freshness, for viewers while one reads them again."""
CHART_HEIGHT = 80
BAR_WIDTH = 8
T = TypeVar("T")


class TaskMonitor(Task):
    """No table: the task monitor's entry in the admin."""

    class Meta:
        proxy = True
        app_label = "django_mcp"
        verbose_name = verbose_name_plural = "task monitor"
        default_permissions = ()


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


@dataclass(frozen=True)
class ToolCalls:
    tool: str
    calls: int
    errors: int

    @property
    def error_rate(self) -> float:
        return self.errors / self.calls if self.calls else 0.0


def audit_figures(since: datetime, scope: str | None) -> dict[str, Any]:
    """Calls per tool with their error rate, and the top callers, since ``since`` (the audit log's)."""
    calls = ToolCall.objects.filter(created_at__gte=since)
    if scope is not None:
        calls = calls.filter(server=scope)
    errors = Count("id", filter=Q(outcome__in=("error", "refused")))
    per_tool = calls.values("tool").annotate(n=Count("id"), errors=errors).order_by("-n", "tool")[:20]
    callers = calls.values("caller").annotate(n=Count("id")).order_by("-n", "caller")[:10]
    return {
        "tools": [ToolCalls(row["tool"], row["n"], row["errors"]) for row in per_tool],
        "callers": [(row["caller"], row["n"]) for row in callers],
    }


@dataclass(frozen=True)
class Figures:
    """What every viewer of one server's monitor (or of all servers') sees alike."""

    snapshot: Snapshot
    audit: dict[str, Any] | None


def read_figures(scope: str | None) -> Figures:
    """The monitor's figures, read from the database now."""
    now = timezone.now()
    tasks_settings = get_tasks_settings()
    figures = snapshot(
        now,
        WINDOW,
        scope,
        tasks_settings.TASK_QUEUED_TIMEOUT_SECONDS,
        tasks_settings.TASK_INPUT_WAIT_SECONDS,
        tasks_settings.TASK_LEASE_SECONDS,
    )
    return Figures(figures, audit_figures(now - WINDOW, scope) if get_settings().AUDIT else None)


def shared(name: str, read: Callable[[], T]) -> T:
    """``read()``'s value, shared by every viewer through the shared cache: read at most once per
    :data:`FRESH_SECONDS` whoever looks, however many look. When it is older, one viewer reads it again
    (it takes a short lock) while the others get the held one meanwhile."""
    cache = shared_cache(get_settings().SESSION_CACHE)
    key = f"{SHARED_KEY}:{name}"
    try:
        held = cache.get(key)
        fresh = held is not None and 0 <= time.time() - held[0] < FRESH_SECONDS  # a clock behind another's: stale
        if held is not None and (fresh or not cache.add(f"{key}:reading", 1, 10)):
            return cast(T, held[1])
    except Exception:  # a monitor is best-effort: the cache's failures are the sign-in's to report
        return read()
    value = read()
    with contextlib.suppress(Exception):
        cache.set(key, (time.time(), value), HELD_SECONDS)
        cache.delete(f"{key}:reading")
    return value


def monitor_context(request: HttpRequest) -> dict[str, Any]:
    """What the monitor page shows: every server's figures, or ``?server=``'s."""
    known = shared("servers", servers)
    chosen = request.GET.get("server")
    scope = chosen if chosen in known else None
    every = shared(f"figures:{'*' if scope is None else scope}", partial(read_figures, scope))
    figures = every.snapshot
    bars, peak = chart(figures.minutes)
    statuses = TaskStatus.choices
    return {
        "servers": known,
        "server": scope,
        "figures": figures,
        "active": [(label, figures.active.get(value, 0)) for value, label in statuses if value in ACTIVE],
        "finished": [(label, figures.finished.get(value, 0)) for value, label in statuses if value in TERMINAL],
        "bars": bars,
        "peak": peak,
        "chart_width": len(bars) * BAR_WIDTH,
        "chart_height": CHART_HEIGHT,
        "bar_width": BAR_WIDTH - 1,
        # Every live process's, once any wrote its row; before that, this process's own.
        "listen_streams_here": figures.listen_streams is None,
        "listen_streams": open_listen_streams() if figures.listen_streams is None else figures.listen_streams,
        "audit": every.audit,
    }


@outside_atomic_requests  # a browser's, behind the site's login; never in a request transaction
async def monitor_events(request: HttpRequest) -> HttpResponseBase:
    """The live monitor's stream (server-sent events): each process's task changes, in batches.

    Staff who may view tasks only, checked when it opens. 204 (an ``EventSource`` then stops trying)
    without a channel layer or under a WSGI server, where no stream stays open.
    """
    user = await request.auser()
    if not (user.is_active and user.is_staff and await sync_to_async(user.has_perm)("django_mcp.view_task")):
        return HttpResponseForbidden("Staff who may view tasks only.")
    layer = get_channel_layer()
    if layer is None or isinstance(request, WSGIRequest):
        return HttpResponse(status=204)
    # The stream uses no database: the pooled connection its session and permission took goes back now, not
    # when it ends (kept for as long as a monitor stays open, ten monitors would hold a pool of ten).
    await sync_to_async(give_back_pooled_connections)()
    response = StreamingHttpResponse(_aevents(layer), content_type="text/event-stream")
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"  # nginx: pass each event on as it comes
    return response


async def _aevents(layer: Any) -> AsyncIterator[str]:
    channel = await layer.new_channel()
    await layer.group_add(MONITOR_GROUP, channel)
    try:
        marked = await _amark_open()
        yield "retry: 5000\n\n"
        while True:
            try:
                message = await asyncio.wait_for(layer.receive(channel), KEEPALIVE_SECONDS)
            except TimeoutError:
                message = None
            if time.monotonic() - marked >= KEEPALIVE_SECONDS:
                marked = await _amark_open()
            if message is None:
                yield ": keepalive\n\n"
            elif isinstance(data := _event_data(message), str):
                yield f"data: {data}\n\n"
    finally:
        with contextlib.suppress(Exception):
            await layer.group_discard(MONITOR_GROUP, channel)


def _event_data(message: dict[str, Any]) -> Any:
    notice = message.get("message")
    params = notice.get("params") if isinstance(notice, dict) else None
    return params.get("data") if isinstance(params, dict) else None


async def _amark_open() -> float:
    """Mark a monitor open for :data:`OPEN_MARK_SECONDS` in the shared cache, where every process looks."""
    until = time.time() + OPEN_MARK_SECONDS
    feed.opened(until)
    with contextlib.suppress(Exception):  # other processes then stay quiet; this one's changes still come
        await shared_cache(get_settings().SESSION_CACHE).aset(VIEWERS_KEY, until, OPEN_MARK_SECONDS)
    return time.monotonic()
