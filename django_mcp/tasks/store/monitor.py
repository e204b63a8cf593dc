"""What the admin's task monitor shows: read-only counts over bounded windows, plain ORM.

Every query is bounded by a time window on an indexed column (``created_at``, ``updated_at``), by the
active statuses, or by a row limit, so a table of a million retained tasks costs what its last hour
does.
"""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.db.models import Count, Max, Q, QuerySet
from django.db.models.functions import TruncMinute
from django.utils import timezone

from ..models import ACTIVE, TERMINAL, Node, NodeRole, Task, TaskStatus
from .nodes import seen_since

ROWS_LIMIT = 5000
"""At most this many finished tasks of the window feed the durations and the failure reasons."""


@dataclass(frozen=True)
class Minute:
    start: datetime
    created: int = 0
    completed: int = 0
    failed: int = 0
    cancelled: int = 0


@dataclass(frozen=True)
class ToolDurations:
    tool: str
    finished: int
    p50_seconds: float
    p95_seconds: float


@dataclass(frozen=True)
class FailureReason:
    reason: str
    tasks: int
    latest: Task


@dataclass(frozen=True)
class Stalled:
    task: Task
    why: str


@dataclass(frozen=True)
class Worker:
    """A process that runs tasks: from its :class:`~..models.Node` row, the tasks it runs, or both."""

    node: str
    running: int
    lease_until: datetime | None
    process: Node | None = None
    silent: bool = False
    """Not seen for a lease while it should have been: a web server (it writes all the time it serves),
    or a worker that said it was running tasks."""


@dataclass
class Snapshot:
    """The monitor's figures at ``now`` over the ``window`` before it (one server's, or every server's)."""

    now: datetime
    window: timedelta
    active: dict[str, int] = field(default_factory=dict)
    finished: dict[str, int] = field(default_factory=dict)
    minutes: list[Minute] = field(default_factory=list)
    durations: list[ToolDurations] = field(default_factory=list)
    failures: list[FailureReason] = field(default_factory=list)
    stalled: list[Stalled] = field(default_factory=list)
    queued: int = 0
    workers: list[Worker] = field(default_factory=list)
    listen_streams: int | None = None
    """Open listen streams of every process seen within a lease; None: no process wrote its row."""


def servers() -> list[str]:
    """The servers (``scope``) with active tasks or tasks created in the last day."""
    recent = Task.objects.filter(Q(status__in=ACTIVE) | Q(created_at__gte=_day_ago()))
    return sorted(set(recent.values_list("scope", flat=True).order_by()))


def _day_ago() -> datetime:
    return timezone.now() - timedelta(days=1)


def snapshot(
    now: datetime,
    window: timedelta,
    scope: str | None,
    queued_timeout: float | None,
    input_wait: float | None = None,
    lease_seconds: float = 15.0,
) -> Snapshot:
    """The figures of :class:`Snapshot`; ``scope`` None: every server. ``queued_timeout`` and ``input_wait``
    (seconds, None: never) say when a fleet task waiting for a worker and a task waiting for an answer stall;
    a process not seen for ``lease_seconds`` is silent (as a lease lapses)."""
    tasks: QuerySet[Task] = Task.objects.all() if scope is None else Task.objects.filter(scope=scope)
    since = now - window
    active = tasks.filter(status__in=ACTIVE)
    ended = tasks.filter(status__in=TERMINAL, updated_at__gte=since)
    figures = Snapshot(now, window)
    figures.active = dict(active.values_list("status").annotate(n=Count("id")).order_by())
    figures.finished = dict(ended.values_list("status").annotate(n=Count("id")).order_by())
    figures.minutes = _minutes(tasks, ended, since, now)
    recent_first = ended.order_by("-updated_at")  # the (status, updated_at) index, newest first
    finished = list(
        recent_first.only("id", "tool", "status", "status_message", "error", "created_at", "updated_at")[:ROWS_LIMIT]
    )
    figures.durations = _durations(finished)
    figures.failures = _failures([task for task in finished if task.status == TaskStatus.FAILED])
    figures.stalled = _stalled(active, now, queued_timeout, input_wait)
    figures.queued = active.filter(node="").exclude(backend="").count()
    running = active.exclude(node="").values("node").annotate(n=Count("id"), until=Max("lease_expires_at"))
    leases = {row["node"]: (row["n"], row["until"]) for row in running.order_by("node")}
    seen = seen_since(since, scope)
    figures.workers = _workers(leases, seen, now - timedelta(seconds=lease_seconds))
    figures.listen_streams = _listen_streams(seen, now - timedelta(seconds=lease_seconds))
    return figures


def _workers(leases: dict[str, tuple[int, datetime | None]], seen: list[Node], alive_since: datetime) -> list[Worker]:
    """The processes seen in the window (most recently seen first), then those running tasks unseen."""
    workers = []
    for node in seen:
        running, until = leases.pop(node.name, (0, None))
        stale = node.seen_at < alive_since
        silent = stale and (node.role == NodeRole.WEB or running > 0 or node.running > 0)
        workers.append(Worker(node.name, running, until, node, silent))
    return workers + [Worker(name, n, until) for name, (n, until) in leases.items()]


def _listen_streams(seen: list[Node], alive_since: datetime) -> int | None:
    """Every live process's open listen streams, once per process (its servers each write a row)."""
    per_process = {(node.host, node.pid): node.listen_streams for node in seen if node.seen_at >= alive_since}
    return sum(per_process.values()) if seen else None


def _minutes(tasks: QuerySet[Task], ended: QuerySet[Task], since: datetime, now: datetime) -> list[Minute]:
    created = tasks.filter(created_at__gte=since).annotate(minute=TruncMinute("created_at"))
    by_minute: dict[datetime, dict[str, int]] = defaultdict(dict)
    for minute, n in created.values_list("minute").annotate(n=Count("id")).order_by():
        by_minute[minute]["created"] = n
    outcomes = ended.annotate(minute=TruncMinute("updated_at")).values_list("minute", "status")
    for minute, status, n in outcomes.annotate(n=Count("id")).order_by():
        by_minute[minute][status] = n
    first = since.replace(second=0, microsecond=0)
    count = int((now - first).total_seconds() // 60) + 1
    starts = [first + timedelta(minutes=i) for i in range(count)]
    return [Minute(start, **by_minute.get(start, {})) for start in starts]


def _durations(finished: list[Task]) -> list[ToolDurations]:
    seconds: dict[str, list[float]] = defaultdict(list)
    for task in finished:
        seconds[task.tool].append((task.updated_at - task.created_at).total_seconds())
    rows = []
    for tool, values in sorted(seconds.items()):
        values.sort()
        p95 = values[min(len(values) - 1, int(0.95 * len(values)))]
        rows.append(ToolDurations(tool, len(values), statistics.median(values), p95))
    return rows


def _failures(failed: list[Task]) -> list[FailureReason]:
    reasons: Counter[str] = Counter()
    latest: dict[str, Task] = {}
    for task in failed:  # newest first (the model's ordering)
        error = task.error if isinstance(task.error, dict) else {}
        reason = str(error.get("message") or task.status_message or "no reason given")
        reasons[reason] += 1
        latest.setdefault(reason, task)
    return [FailureReason(reason, n, latest[reason]) for reason, n in reasons.most_common(10)]


def _stalled(
    tasks: QuerySet[Task], now: datetime, queued_timeout: float | None, input_wait: float | None
) -> list[Stalled]:
    active = tasks.only("id", "tool", "status", "node", "created_at", "updated_at", "lease_expires_at")  # no payloads
    lapsed = active.exclude(node="").filter(lease_expires_at__lt=now)
    rows = [Stalled(task, "its process stopped renewing its lease") for task in lapsed[:50]]
    if queued_timeout is not None:
        waiting = active.filter(node="").exclude(backend="")
        waiting = waiting.filter(created_at__lt=now - timedelta(seconds=queued_timeout))
        rows += [Stalled(task, "no worker started it within its queue timeout") for task in waiting[:50]]
    if input_wait is not None:  # the (status, updated_at) index
        asking = active.filter(status=TaskStatus.INPUT_REQUIRED, updated_at__lt=now - timedelta(seconds=input_wait))
        why = f"it has waited for an answer for over {input_wait:g} s"
        flagged = {row.task.pk for row in rows}  # a lapsed lease says more
        rows += [Stalled(task, why) for task in asking[:50] if task.pk not in flagged]
    return rows
