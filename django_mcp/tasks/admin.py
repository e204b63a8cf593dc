"""A read-only admin for tasks, with a "Cancel selected tasks" action."""

from __future__ import annotations

import json
from typing import Any

from asgiref.sync import async_to_sync
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.html import format_html

from .models import ACTIVE, Task


def _pretty(value: Any) -> str:
    if value in (None, {}, []):
        return "—"
    return format_html("<pre>{}</pre>", json.dumps(value, indent=2, ensure_ascii=False))


@admin.register(Task)
class TaskAdmin(admin.ModelAdmin):  # not subscriptable at run time
    list_display = ["id", "tool", "status", "owner", "status_message", "created_at", "expires_at"]
    list_filter = ["status", "tool", "created_at"]
    search_fields = ["id", "owner", "tool"]
    ordering = ["-created_at"]
    date_hierarchy = "created_at"
    actions = ["cancel_selected"]
    fields = _FIELDS = (
        "id",
        "tool",
        "status",
        "status_message",
        "owner",
        "created_at",
        "updated_at",
        "expires_at",
        "cancel_requested",
        "node",
        "lease_expires_at",
        "ttl_ms",
        "poll_interval_ms",
        "pretty_arguments",
        "pretty_input_requests",
        "pretty_input_responses",
        "pretty_result",
        "pretty_error",
    )
    readonly_fields = _FIELDS

    @admin.display(description="arguments")
    def pretty_arguments(self, task: Task) -> str:
        return _pretty(task.arguments)

    @admin.display(description="outstanding input requests")
    def pretty_input_requests(self, task: Task) -> str:
        return _pretty(task.input_requests)

    @admin.display(description="answers not yet consumed")
    def pretty_input_responses(self, task: Task) -> str:
        return _pretty(task.input_responses)

    @admin.display(description="result")
    def pretty_result(self, task: Task) -> str:
        return _pretty(task.result)

    @admin.display(description="error")
    def pretty_error(self, task: Task) -> str:
        return _pretty(task.error)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Task | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Task | None = None) -> bool:
        return False

    def has_cancel_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("django_mcp.cancel_task")

    @admin.action(description="Cancel selected tasks", permissions=["cancel"])
    def cancel_selected(self, request: HttpRequest, queryset: QuerySet[Task]) -> None:
        from .plugin import cancel_task  # the same code path as tasks/cancel

        active = list(queryset.filter(status__in=ACTIVE))
        for task in active:
            async_to_sync(cancel_task)(task)
        skipped = queryset.count() - len(active)
        self.message_user(request, f"Requested cancellation of {len(active)} task(s).", messages.SUCCESS)
        if skipped:
            self.message_user(request, f"{skipped} task(s) had already finished.", messages.WARNING)
