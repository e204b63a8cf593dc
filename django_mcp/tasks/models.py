"""The ``Task`` row: the truth about a task, shared by every server process."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from django.db import models
from django.db.models import Q
from django.utils import timezone


class TaskStatus(models.TextChoices):
    WORKING = "working"
    INPUT_REQUIRED = "input_required"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"


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

    def transition(self, task_id: Any, from_: Iterable[str], to: str, **fields: Any) -> int:
        """Move one task from any of ``from_`` to ``to``; returns 1 if it moved, 0 if it was elsewhere."""
        return self.filter(pk=task_id, status__in=list(from_)).update(status=to, updated_at=timezone.now(), **fields)


class Task(models.Model):
    """One task (SEP-2663). Created by ``mcp_task``; read by ``tasks/get`` from any process."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    status = models.CharField(max_length=16, choices=TaskStatus.choices, default=TaskStatus.WORKING)
    tool = models.CharField(max_length=128)
    owner = models.CharField(max_length=255, help_text="The binding key of who may see the task.")
    arguments = models.JSONField(default=dict, blank=True)
    status_message = models.TextField(blank=True, default="", help_text="Empty: no statusMessage on the wire.")
    input_requests = models.JSONField(default=dict, blank=True, help_text="Outstanding requests by wire key.")
    input_responses = models.JSONField(default=dict, blank=True, help_text="Answers received, not yet consumed.")
    input_keys = models.JSONField(default=list, blank=True, help_text="Every wire key ever issued (never reused).")
    result = models.JSONField(null=True, blank=True)
    error = models.JSONField(null=True, blank=True)
    cancel_requested = models.BooleanField(default=False)
    ttl_ms = models.PositiveBigIntegerField(null=True, blank=True)
    poll_interval_ms = models.PositiveIntegerField()
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    updated_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField(null=True, blank=True)
    node = models.CharField(max_length=64, blank=True, help_text="The server process running the task.")
    lease_expires_at = models.DateTimeField(null=True, blank=True)

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
        ]

    def __str__(self) -> str:
        return f"{self.tool} {self.id} ({self.status})"

    @property
    def is_terminal(self) -> bool:
        return self.status in TERMINAL
