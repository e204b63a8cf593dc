"""The ``Task`` row: the truth about a task, shared by every server process."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..server.caller import Caller

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone


class TaskStatus(models.TextChoices):
    WORKING = "working"
    INPUT_REQUIRED = "input_required"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"


class OwnerKind(models.TextChoices):
    """What kind of caller created a task (never the secret that authenticated it)."""

    USER = "user", "Django user"
    PRINCIPAL = "principal", "token principal"
    ANONYMOUS = "anonymous", "anonymous"


ACTIVE = (TaskStatus.WORKING, TaskStatus.INPUT_REQUIRED)
TERMINAL = (TaskStatus.COMPLETED, TaskStatus.FAILED, TaskStatus.CANCELLED)


class TaskQuerySet(models.QuerySet["Task"]):
    """State helpers. Transitions are compare-and-set updates: they only apply from the expected states."""

    def active(self) -> TaskQuerySet:
        return self.filter(status__in=ACTIVE)

    def live(self, now: datetime) -> TaskQuerySet:
        """Not expired (a task is retrievable until ``expires_at``)."""
        return self.filter(Q(expires_at__isnull=True) | Q(expires_at__gt=now))

    def expired(self, now: datetime) -> TaskQuerySet:
        return self.filter(expires_at__lte=now)

    def for_owner(self, owner: str) -> TaskQuerySet:
        return self.filter(owner=owner)


class Task(models.Model):
    """One task (SEP-2663). Created by a task tool's ``tools/call``; read by ``tasks/get`` from any process."""

    id = models.UUIDField(
        primary_key=True, default=uuid.uuid4, editable=False, help_text="The task's id: taskId on the wire."
    )
    status = models.CharField(
        max_length=16,
        choices=TaskStatus.choices,
        default=TaskStatus.WORKING,
        help_text="Working or input required while the task runs; completed, failed or cancelled once it is done.",
    )
    tool = models.CharField(max_length=128, help_text="The tool the client called as a task.")
    owner = models.CharField(
        max_length=255,
        help_text="Who may read, answer and cancel the task: a SHA-256 digest of the server and the caller's "
        "principal. The principal itself (which may be a bearer token) is never stored.",
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="mcp_tasks",
        help_text="The Django user who created the task, when the caller was one (the session user, or an auth "
        "principal that is a user). For display and search only: access is decided by the owner digest.",
    )
    owner_kind = models.CharField(
        max_length=16,
        choices=OwnerKind.choices,
        blank=True,
        default="",
        help_text="What kind of caller created the task: a Django user, a principal of the endpoint's auth that "
        "is not a user (such as a bearer token, which is not stored), or anonymous. Blank on tasks created "
        "before it was recorded.",
    )
    counted_as = models.CharField(
        max_length=255,
        blank=True,
        default="",
        db_default="",  # processes of an older version, during a rolling deploy, insert without it
        help_text="Whom the per-caller cap counts the task against: the owner digest, or for an anonymous "
        "caller a digest of its client address (for the cap only: anonymous callers still share their tasks).",
    )
    arguments = models.JSONField(default=dict, blank=True, help_text="The arguments of the tool call.")
    status_message = models.TextField(
        blank=True,
        default="",
        help_text="The human-readable status the client sees as statusMessage, such as progress or the reason "
        "the task failed.",
    )
    input_requests = models.JSONField(
        default=dict,
        blank=True,
        help_text="Requests for input the client has not answered yet (its inputRequests), by key.",
    )
    input_responses = models.JSONField(
        default=dict, blank=True, help_text="Answers from the client the task has not consumed yet, by key."
    )
    input_keys = models.JSONField(
        default=list, blank=True, help_text="Every input request key issued for the task; a key is never reused."
    )
    result = models.JSONField(
        null=True, blank=True, help_text="The tool's result, once the task completed (inlined in tasks/get's answer)."
    )
    error = models.JSONField(null=True, blank=True, help_text="The JSON-RPC error the task failed with.")
    cancel_requested = models.BooleanField(
        default=False,
        help_text="Cancellation was asked for (by tasks/cancel or the admin); the process running the task "
        "stops it at its next check.",
    )
    ttl_ms = models.PositiveBigIntegerField(
        null=True,
        blank=True,
        help_text="How long the task is kept after it was created, in milliseconds (ttlMs); empty: kept until deleted.",
    )
    poll_interval_ms = models.PositiveIntegerField(
        help_text="How often the client is told to poll for the task, in milliseconds (pollIntervalMs)."
    )
    created_at = models.DateTimeField(
        default=timezone.now, editable=False, help_text="When the task was created (createdAt)."
    )
    updated_at = models.DateTimeField(
        default=timezone.now, help_text="When the task last changed: its status, message or input (lastUpdatedAt)."
    )
    expires_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="When the task expires (created + ttlMs): from then on clients no longer see it, and it is "
        "deleted by the next sweep.",
    )
    scope = models.CharField(
        max_length=255,
        blank=True,
        default="",
        help_text="The server (its URL namespace) whose tasks this counts among, for its caps.",
    )
    node = models.CharField(max_length=64, blank=True, help_text="The server process running the task.")
    request_meta = models.JSONField(
        default=dict,
        blank=True,
        help_text="What the body needs to run elsewhere: protocol version, client capabilities and info of the "
        "tools/call that created the task (a worker process rebuilds the request from it). Empty when the web "
        "process that created the task runs it.",
    )
    backend = models.CharField(
        max_length=64,
        blank=True,
        default="",
        help_text="The Django Tasks backend the body was enqueued on; empty: "
        "it runs in the web process that created it.",
    )
    traceparent = models.CharField(
        max_length=64,
        blank=True,
        default="",
        db_default="",  # processes of an older version, during a rolling deploy, insert without it
        help_text="OpenTelemetry: the W3C traceparent of the tools/call that created the task, which its run's "
        "span links to (on a fleet worker too). Empty without tracing.",
    )
    job_id = models.CharField(max_length=64, blank=True, default="", help_text="The backend's id for the job.")
    lease_expires_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="Until when the running process has claimed the task; a lapsed lease on a running task means "
        "that process stopped, and the task is failed.",
    )
    watched = models.BooleanField(
        default=False,
        db_default=False,
        editable=False,
        help_text="A listen stream subscribed to the task: its changes are published through the channel layer "
        "(a task nobody ever listened to is only polled, and publishing its changes would reach nobody).",
    )

    objects = TaskQuerySet.as_manager()

    class Meta:
        app_label = "django_mcp"
        ordering = ["-created_at"]
        permissions = [("cancel_task", "Can cancel tasks")]
        indexes = [
            models.Index(fields=["owner", "status"], name="django_mcp_task_owner_status"),
            models.Index(fields=["expires_at"], name="django_mcp_task_expires"),
            models.Index(fields=["node", "status"], name="django_mcp_task_node_status"),
            models.Index(fields=["-created_at"], name="django_mcp_task_created"),
            models.Index(fields=["status", "updated_at"], name="django_mcp_task_status_updated"),  # the monitor
        ]

    def __str__(self) -> str:
        return f"{self.tool} {self.id} ({self.status})"

    def lease_lapsed(self) -> bool:
        """Whether the task's lease ran out (its process stopped renewing it), as the row was read."""
        return self.lease_expires_at is not None and self.lease_expires_at <= timezone.now()

    def is_expired(self, now: datetime | None = None) -> bool:
        """Past ``expires_at``: clients no longer see it; the next sweep deletes it."""
        return self.expires_at is not None and self.expires_at <= (now or timezone.now())


class NodeRole(models.TextChoices):
    WEB = "web", "web server"  # its maintenance writes its row all the time it serves
    WORKER = "worker", "fleet worker"  # writes its row while it runs a job and when each ends


class Node(models.Model):
    """A process that runs tasks (``Task.node``): a web server process or a fleet worker, as it last said.

    Each writes its row at every lease renewal interval while it runs and when a fleet job ends, so
    the monitor can say which workers are alive and how many listen streams the whole service holds.
    Rows not seen for a day are deleted by the next process that writes its own.
    """

    name = models.CharField(max_length=64, primary_key=True, help_text="The node, as tasks it runs record it.")
    server = models.CharField(max_length=255, blank=True, default="", help_text="The server (its URL namespace).")
    role = models.CharField(
        max_length=16, choices=NodeRole.choices, default=NodeRole.WEB, help_text="A web server or a fleet worker."
    )
    host = models.CharField(max_length=255, help_text="The machine the process runs on.")
    pid = models.PositiveIntegerField(help_text="The process id on that machine.")
    command = models.CharField(max_length=255, blank=True, default="", help_text="What the process runs.")
    started_at = models.DateTimeField(help_text="When the process first wrote its row.")
    seen_at = models.DateTimeField(help_text="When the process last wrote its row.")
    running = models.PositiveIntegerField(default=0, help_text="Tasks it was running, as it last said.")
    listen_streams = models.PositiveIntegerField(
        default=0, help_text="Listen streams the process held open, as it last said (for all its servers)."
    )

    class Meta:
        app_label = "django_mcp"
        ordering = ["-seen_at"]
        indexes = [models.Index(fields=["seen_at"], name="django_mcp_node_seen")]

    def __str__(self) -> str:
        return f"{self.command or 'process'} {self.pid} on {self.host}"


def creator_fields(caller: Caller) -> dict[str, Any]:
    """``user`` and ``owner_kind`` for a task created by ``caller``.

    A caller that is or acts for a user (a verified bearer token's ``user``) is that user. Nothing
    secret is returned: a principal that is not a user is recorded only as its kind.
    """
    # The model the ``user`` column holds (settings.AUTH_USER_MODEL when the models were loaded): an
    # attribute of the field, where get_user_model() looks the setting and the app registry up each time.
    user_model: Any = Task._meta.get_field("user").related_model
    acting = caller.acting_for
    if isinstance(acting, user_model) and acting.pk is not None:
        return {"user": acting, "owner_kind": OwnerKind.USER}
    return {"user": None, "owner_kind": OwnerKind.PRINCIPAL if caller.is_principal else OwnerKind.ANONYMOUS}


class TaskQuota(models.Model):
    """How many tasks a server retains (``owner`` empty) and how many each owner on it does.

    Creation checks the caps against these rows, locked, so its cost does not grow with the
    table; every path that deletes tasks goes through the store, which keeps them in step.
    A row is initialised from a count of the tasks once, when first needed.
    """

    scope = models.CharField(max_length=255, help_text="The server (its URL namespace).")
    owner = models.CharField(max_length=255, blank=True, help_text="The binding key; empty: the whole server.")
    count = models.BigIntegerField(default=0, help_text="Tasks retained (until they expire and are swept).")

    class Meta:
        app_label = "django_mcp"
        constraints = [models.UniqueConstraint(fields=["scope", "owner"], name="django_mcp_taskquota_unique")]

    def __str__(self) -> str:
        return f"{self.scope or '(default)'} {self.owner or '(all)'}: {self.count}"
