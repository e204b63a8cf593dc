"""Task rows made directly in the database, and their fields, for the store's read paths."""

from __future__ import annotations

from datetime import timedelta

from django.forms.models import model_to_dict
from django.utils import timezone

from django_mcp.models import Task

OWNER = "sha256:" + "a" * 64


def task_fields(task: Task) -> dict:
    return {**model_to_dict(task), "id": task.id, "created_at": task.created_at, "updated_at": task.updated_at}


def make_task(**fields) -> Task:
    values = {
        "tool": "slow",
        "owner": OWNER,
        "owner_kind": "principal",
        "poll_interval_ms": 500,
        "expires_at": timezone.now() + timedelta(hours=1),
        **fields,
    }
    return Task.objects.create(**values)
