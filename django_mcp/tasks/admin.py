"""A read-only admin for tasks: whose, what, when; with "Cancel selected tasks" and "Delete expired tasks" actions."""

from __future__ import annotations

import json
from datetime import datetime
from typing import TYPE_CHECKING, Any

from django.contrib import admin, messages
from django.contrib.admin.utils import quote, unquote
from django.contrib.auth import get_permission_codename, get_user_model
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponseRedirect
from django.urls import NoReverseMatch, path, reverse
from django.utils import timezone
from django.utils.decorators import method_decorator
from django.utils.html import format_html
from django.utils.text import Truncator
from django.views.decorators.http import require_POST

from .cancelling import cancel_task
from .models import ACTIVE, OwnerKind, Task, TaskQuerySet
from .store.caps import sweep_expired

_NOWRAP = "white-space:nowrap"
_MONO = "font-family:var(--font-family-monospace, monospace);white-space:nowrap"
_MESSAGE_CHARS = 200  # then cut to the column's width, with the whole message as a tooltip
_CLIPPED = (
    "display:inline-block;max-width:{};overflow:hidden;text-overflow:ellipsis;white-space:nowrap;vertical-align:top"
)


def _pretty(value: Any) -> str:
    if value in (None, {}, []):
        return "—"
    return format_html("<pre>{}</pre>", json.dumps(value, indent=2, ensure_ascii=False))


def _local(moment: datetime) -> datetime:
    # USE_TZ = False: Django's datetimes are naive and already the project's local time.
    return timezone.localtime(moment) if timezone.is_aware(moment) else moment


def local_time(moment: datetime) -> str:
    """``2026-12-03 06:41:07``: to the second, in the current time zone."""
    return _local(moment).strftime("%Y-%m-%d %H:%M:%S")


def time_cell(moment: datetime | None) -> str:
    """A moment as the lists and pages of tasks and tool calls show it: local time to the second, one line."""
    if moment is None:
        return "—"
    local = _local(moment)
    aware = moment if timezone.is_aware(moment) else timezone.make_aware(moment)
    return format_html(
        '<time datetime="{}" title="{}" style="{}">{}</time>',
        aware.isoformat(),
        local.isoformat(timespec="milliseconds"),
        _NOWRAP,
        local_time(moment),
    )


def _span(seconds: float) -> str:
    """``45 s``, ``12 min``, ``3 h 5 min``, ``2 d 4 h``."""
    s = int(seconds)
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min"
    if s < 86400:
        return f"{s // 3600} h {s % 3600 // 60} min"
    return f"{s // 86400} d {s % 86400 // 3600} h"


def _from_now(moment: datetime) -> str:
    """``in 1 h 59 min`` or ``5 min ago``."""
    seconds = (moment - timezone.now()).total_seconds()
    return f"in {_span(seconds)}" if seconds > 0 else f"{_span(-seconds)} ago"


def _short_digest(owner: str) -> str:
    digest = owner.removeprefix("sha256:")
    return format_html('<code title="{}" style="{}">{}…</code>', owner, _MONO, digest[:8])


def unique_prefix_chars(ids: list[str], shortest: int = 8) -> int:
    """How many leading characters tell every id of ``ids`` apart (at least ``shortest``)."""
    chars = shortest
    while len({i[:chars] for i in ids}) < len(set(ids)):
        chars += 1
    return chars


def _help(name: str) -> str:
    return str(getattr(Task._meta.get_field(name), "help_text", ""))


class UserFilter(admin.RelatedOnlyFieldListFilter):
    """The users who created tasks, and the tasks created by no Django user."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.empty_value_display = format_html("{}", "no Django user")


class ExpiredFilter(admin.SimpleListFilter):
    """Expired: past ``expires_at``. Clients no longer see such a task; the next sweep deletes it."""

    title = "expired"
    parameter_name = "expired"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("yes", "Yes"), ("no", "No")]

    def queryset(self, request: HttpRequest, queryset: TaskQuerySet) -> TaskQuerySet:  # type: ignore[override]
        if self.value() == "yes":
            return queryset.expired(timezone.now())
        if self.value() == "no":
            return queryset.live(timezone.now())
        return queryset


if TYPE_CHECKING:
    _ModelAdmin = admin.ModelAdmin[Task]
else:
    _ModelAdmin = admin.ModelAdmin  # not subscriptable at run time


@admin.register(Task)
class TaskAdmin(_ModelAdmin):
    list_display = ["task_id", "tool_shown", "status_shown", "who", "message", "created", "updated", "expires"]
    list_display_links = ["task_id"]
    list_filter = ["status", ExpiredFilter, "tool", "owner_kind", ("user", UserFilter)]
    list_select_related = ["user"]
    search_help_text = "Task id (or its first characters), tool, status message, user name or e-mail, owner digest."
    ordering = ["-created_at"]
    date_hierarchy = "created_at"
    actions = ["cancel_selected", "delete_expired"]
    _what_fields = ("id", "tool", "status_shown", "status_message")
    _whose_fields = ("who", "owner_kind", "owner")
    _when_fields = ("created", "updated", "expires_exactly", "lease_expires", "ttl_ms", "poll_interval_ms")
    _running_fields = ("node", "cancel_requested", "watched")
    _data_fields = (
        "pretty_arguments",
        "pretty_input_requests",
        "pretty_input_responses",
        "pretty_result",
        "pretty_error",
    )
    fieldsets = [
        (None, {"fields": _what_fields}),
        ("Whose", {"fields": _whose_fields}),
        ("When", {"fields": _when_fields}),
        ("Running", {"fields": _running_fields}),
        ("Data", {"fields": _data_fields}),
    ]
    readonly_fields = [*_what_fields, *_whose_fields, *_when_fields, *_running_fields, *_data_fields]

    # -- the list ----------------------------------------------------------------------

    @admin.display(description="task", ordering="id")
    def task_id(self, task: Task) -> str:
        """The id's shortest prefix (8 hex digits or more) that no other listed task shares; the whole id as
        a tooltip and on the detail page."""
        chars = getattr(task, "_listed_prefix_chars", len(task.id.hex))
        return format_html('<code title="{}" style="{}">{}</code>', task.id, _MONO, task.id.hex[:chars])

    def get_changelist_instance(self, request: HttpRequest) -> Any:
        changelist = super().get_changelist_instance(request)
        tasks = list(changelist.result_list)
        chars = unique_prefix_chars([task.id.hex for task in tasks])
        for task in tasks:
            task._listed_prefix_chars = chars
        return changelist

    @admin.display(description="tool", ordering="tool")
    def tool_shown(self, task: Task) -> str:
        return format_html('<span title="{}" style="{}">{}</span>', task.tool, _CLIPPED.format("12em"), task.tool)

    @admin.display(description="status", ordering="status")
    def status_shown(self, task: Task) -> str:
        if task.is_expired():
            return format_html(
                '<span style="{}">{} <strong class="mcp-expired" title="Expired at {}" '
                'style="color:var(--error-fg, #ba2121)">expired</strong></span>',
                _NOWRAP,
                task.get_status_display(),
                local_time(task.expires_at) if task.expires_at else "",
            )
        return format_html('<span style="{}">{}</span>', _NOWRAP, task.get_status_display())

    @admin.display(description="who")
    def who(self, task: Task) -> str:
        """The Django user (linked to their admin page) where there is one; else what kind of caller it was."""
        user = task.user
        if user is not None:
            name = user.get_username()
            full_name = getattr(user, "get_full_name", lambda: "")()
            email = getattr(user, "email", "")
            title = " · ".join(part for part in (full_name, email) if part) or name
            url = self._user_url(user)
            if url:
                return format_html(
                    '<a href="{}" title="{}" style="{}">{}</a>', url, title, _CLIPPED.format("10em"), name
                )
            return format_html('<span title="{}" style="{}">{}</span>', title, _CLIPPED.format("10em"), name)
        if task.owner_kind == OwnerKind.ANONYMOUS:
            return format_html('<span style="{}">anonymous</span>', _NOWRAP)
        if task.owner_kind == OwnerKind.PRINCIPAL:
            return format_html('<span title="{}" style="{}">token principal</span>', task.owner, _NOWRAP)
        if task.owner_kind == OwnerKind.USER:
            return format_html('<span style="{}">deleted user</span>', _NOWRAP)
        return _short_digest(task.owner)  # recorded before the kind of caller was

    @admin.display(description="status message", ordering="status_message")
    def message(self, task: Task) -> str:
        if not task.status_message:
            return "—"
        # Out of the flow, the text does not widen the column: the column takes what the others leave (at
        # least 6em, the in-flow no-break space keeping one line's height) and the text ends in an ellipsis.
        return format_html(
            '<span title="{}" style="display:block;position:relative;min-width:6em">&nbsp;<span style="position:'
            'absolute;inset:0;overflow:hidden;text-overflow:ellipsis;white-space:nowrap">{}</span></span>',
            task.status_message,
            Truncator(task.status_message).chars(_MESSAGE_CHARS),
        )

    @admin.display(description="created", ordering="created_at")
    def created(self, task: Task) -> str:
        return time_cell(task.created_at)

    @admin.display(description="updated", ordering="updated_at")
    def updated(self, task: Task) -> str:
        return time_cell(task.updated_at)

    @admin.display(description="expires", ordering="expires_at")
    def expires(self, task: Task) -> str:
        """How long until the task expires (or since it did); the exact time as a tooltip and on the detail page."""
        if task.expires_at is None:
            return format_html('<span title="{}" style="{}">never</span>', "Kept until deleted (no ttlMs)", _NOWRAP)
        return format_html(
            '<time datetime="{}" title="{}" style="{}">{}</time>',
            task.expires_at.isoformat(),
            local_time(task.expires_at),
            _NOWRAP,
            _from_now(task.expires_at),
        )

    @admin.display(description="expires")
    def expires_exactly(self, task: Task) -> str:
        if task.expires_at is None:
            return "never (no ttlMs)"
        return format_html("{} ({})", time_cell(task.expires_at), _from_now(task.expires_at))

    @admin.display(description="lease expires")
    def lease_expires(self, task: Task) -> str:
        return time_cell(task.lease_expires_at)

    def get_fieldsets(self, request: HttpRequest, obj: Task | None = None) -> Any:
        # A lease means something only while the task runs: a finished task's last one is history.
        if obj is None or obj.status in ACTIVE:
            return self.fieldsets
        return [
            (name, {**options, "fields": tuple(f for f in options["fields"] if f != "lease_expires")})
            for name, options in self.fieldsets
        ]

    def _user_url(self, user: Any) -> str | None:
        """The user's change page in this admin site, if the user model is registered there."""
        if not self.admin_site.is_registered(type(user)):
            return None
        opts = user._meta
        try:
            return reverse(
                f"{self.admin_site.name}:{opts.app_label}_{opts.model_name}_change",
                args=[quote(user.pk)],
                current_app=self.admin_site.name,
            )
        except NoReverseMatch:
            return None

    def changelist_view(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> Any:
        # The list needs the width: its own filters stand beside it, so the site's app sidebar is left out here.
        return super().changelist_view(request, {"is_nav_sidebar_enabled": False, **(extra_context or {})})

    def get_search_fields(self, request: HttpRequest) -> list[str]:
        user_model = get_user_model()
        fields = ["id", "tool", "status_message", "owner", f"user__{user_model.USERNAME_FIELD}"]
        email = user_model.get_email_field_name()
        if email and email != user_model.USERNAME_FIELD and any(f.name == email for f in user_model._meta.fields):
            fields.append(f"user__{email}")
        return fields

    # -- the detail page -----------------------------------------------------------------

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

    def get_form(self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any) -> Any:
        # Read-only fields shown through a method take their help text from the form, not the model.
        help_texts = {
            "status_shown": _help("status"),
            "who": _help("user"),
            "created": _help("created_at"),
            "updated": _help("updated_at"),
            "expires_exactly": _help("expires_at"),
            "lease_expires": _help("lease_expires_at"),
            "pretty_arguments": _help("arguments"),
            "pretty_input_requests": _help("input_requests"),
            "pretty_input_responses": _help("input_responses"),
            "pretty_result": _help("result"),
            "pretty_error": _help("error"),
        }
        kwargs["help_texts"] = {**help_texts, **kwargs.get("help_texts", {})}
        return super().get_form(request, obj, change, **kwargs)

    def change_view(
        self, request: HttpRequest, object_id: str, form_url: str = "", extra_context: dict[str, Any] | None = None
    ) -> Any:
        task = self.get_object(request, unquote(object_id))
        cancellable = task is not None and task.status in ACTIVE and self.has_cancel_permission(request)
        return super().change_view(
            request, object_id, form_url, {"can_cancel_task": cancellable, **(extra_context or {})}
        )

    def get_urls(self) -> list[Any]:
        view = self.admin_site.admin_view(self.cancel_view)
        name = f"{self.opts.app_label}_{self.opts.model_name}_cancel"
        return [path("<path:object_id>/cancel/", view, name=name), *super().get_urls()]

    @method_decorator(require_POST)
    def cancel_view(self, request: HttpRequest, object_id: str) -> HttpResponseRedirect:
        """The detail page's "Cancel task" button: the list action's path and permission, for one task."""
        if not self.has_cancel_permission(request):
            raise PermissionDenied
        task = self.get_object(request, unquote(object_id))
        if task is None:
            raise Http404(f"No task with id {object_id!r}.")
        if task.status in ACTIVE:
            cancel_task(task)
            self.message_user(request, "Requested cancellation of the task.", messages.SUCCESS)
        else:
            self.message_user(request, "The task had already finished.", messages.WARNING)
        opts = self.opts
        return HttpResponseRedirect(
            reverse(
                f"admin:{opts.app_label}_{opts.model_name}_change",
                args=[quote(task.pk)],
                current_app=self.admin_site.name,
            )
        )

    # -- permissions and actions ---------------------------------------------------------

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Task | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Task | None = None) -> bool:
        return False  # a running task is never deleted from under its runner; expired ones go by the sweep

    def has_cancel_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("django_mcp.cancel_task")

    def has_sweep_permission(self, request: HttpRequest) -> bool:
        """The model's delete permission (``django_mcp.delete_task``) allows the sweep of expired tasks."""
        return request.user.has_perm(f"{self.opts.app_label}.{get_permission_codename('delete', self.opts)}")

    @admin.action(description="Cancel selected tasks", permissions=["cancel"])
    def cancel_selected(self, request: HttpRequest, queryset: TaskQuerySet) -> None:
        active = list(queryset.filter(status__in=ACTIVE))
        for task in active:
            cancel_task(task)
        skipped = queryset.count() - len(active)
        self.message_user(request, f"Requested cancellation of {len(active)} task(s).", messages.SUCCESS)
        if skipped:
            self.message_user(request, f"{skipped} task(s) had already finished.", messages.WARNING)

    @admin.action(description="Delete expired tasks (all of them, as mcp_clear_tasks does)", permissions=["sweep"])
    def delete_expired(self, request: HttpRequest, queryset: TaskQuerySet) -> None:
        now = timezone.now()
        kept = queryset.live(now).count()
        deleted = sweep_expired(now)
        self.message_user(request, f"Deleted {deleted} expired task(s).", messages.SUCCESS)
        if kept:
            self.message_user(request, f"{kept} selected task(s) have not expired: kept.", messages.WARNING)
