"""Admin registrations (the tasks extension's and sign-in's live in their subpackages)."""

from typing import TYPE_CHECKING, Any

from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest
from django.template.response import TemplateResponse
from django.urls import path

from .audit import ToolCall
from .auth import admin as auth_admin  # noqa: F401
from .monitor import TaskMonitor, monitor_context, monitor_events
from .tasks import admin as tasks_admin
from .tasks.models import Task

if TYPE_CHECKING:
    _ModelAdmin = admin.ModelAdmin[ToolCall]
    _MonitorAdmin = admin.ModelAdmin[TaskMonitor]
else:
    _ModelAdmin = _MonitorAdmin = admin.ModelAdmin  # not subscriptable at run time


@admin.register(ToolCall)
class ToolCallAdmin(_ModelAdmin):
    """The audit log: read only (rows are written by the server, and swept after AUDIT_RETENTION_SECONDS)."""

    list_display = ("when", "tool", "caller", "outcome", "duration_ms", "server")
    list_filter = ("outcome", "server", "tool")
    search_fields = ("tool", "caller")
    date_hierarchy = "created_at"
    list_select_related = ("user",)

    def changelist_view(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> Any:
        # As the tasks' list: its own filters stand beside it, so the site's app sidebar is left out here.
        return super().changelist_view(request, {"is_nav_sidebar_enabled": False, **(extra_context or {})})

    @admin.display(description="when", ordering="created_at")
    def when(self, call: ToolCall) -> str:
        return tasks_admin.time_cell(call.created_at)  # as the tasks' list shows its times

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(TaskMonitor)
class TaskMonitorAdmin(_MonitorAdmin):
    """The task monitor's page in place of a list: for staff who may view tasks."""

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return request.user.has_perm("django_mcp.view_task")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def get_urls(self) -> list[Any]:
        events = path("events/", monitor_events, name="django_mcp_taskmonitor_events")
        return [events, *super().get_urls()]

    def changelist_view(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> Any:
        if not self.has_view_permission(request):
            raise PermissionDenied
        context = {
            **self.admin_site.each_context(request),
            "title": "Task monitor",
            "opts": self.opts,
            "tasks_opts": Task._meta,
            **monitor_context(request),
        }
        return TemplateResponse(request, "admin/django_mcp/taskmonitor/monitor.html", context)
