"""Personal tokens in the admin: made with a lifetime, shown once, revoked with an action."""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Any

from django import forms
from django.contrib import admin, messages
from django.contrib.auth import get_user_model
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils import timezone

from .cache import revoked
from .models import PersonalToken

if TYPE_CHECKING:
    _ModelForm = forms.ModelForm[PersonalToken]
    _ModelAdmin = admin.ModelAdmin[PersonalToken]
else:  # not subscriptable at run time
    _ModelForm = forms.ModelForm
    _ModelAdmin = admin.ModelAdmin


class PersonalTokenForm(_ModelForm):
    lifetime_days = forms.IntegerField(
        min_value=1, max_value=3650, initial=90, help_text="The token stops working after this many days."
    )

    class Meta:
        model = PersonalToken
        fields = ("user", "name", "scope")


@admin.register(PersonalToken)
class PersonalTokenAdmin(_ModelAdmin):
    list_display = ("name", "prefix", "user", "scope", "created_at", "expires_at", "revoked_at")
    list_filter = ("revoked_at",)
    actions = ("revoke",)
    raw_id_fields = ("user",)

    def get_search_fields(self, request: HttpRequest) -> tuple[str, ...]:
        return ("name", "prefix", f"user__{get_user_model().USERNAME_FIELD}")  # a custom user may have no username

    def get_form(self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any) -> Any:
        if obj is None:
            kwargs["form"] = PersonalTokenForm
        return super().get_form(request, obj, change=change, **kwargs)

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> tuple[str, ...]:
        # A made token changes only by being revoked: its owner and scopes are what it was given for.
        if obj is None:
            return ()
        return ("user", "name", "scope", "prefix", "created_at", "expires_at", "revoked_at")

    def formfield_for_foreignkey(self, db_field: Any, request: HttpRequest, **kwargs: Any) -> Any:
        # A token acts as its user: only a superuser may make one for someone else.
        if db_field.name == "user" and not request.user.is_superuser:
            kwargs["queryset"] = db_field.remote_field.model._default_manager.filter(pk=request.user.pk)
        return super().formfield_for_foreignkey(db_field, request, **kwargs)

    def save_model(self, request: HttpRequest, obj: PersonalToken, form: Any, change: bool) -> None:
        if change:
            return
        row, token = PersonalToken.issue(
            form.cleaned_data["user"],
            form.cleaned_data["name"],
            scope=form.cleaned_data["scope"],
            lifetime=timedelta(days=form.cleaned_data["lifetime_days"]),
        )
        obj.pk, obj.prefix, obj.expires_at = row.pk, row.prefix, row.expires_at
        messages.warning(request, f"The new token is {token} — copy it now: it is not stored and not shown again.")

    @admin.action(description="Revoke selected personal tokens")
    def revoke(self, request: HttpRequest, queryset: QuerySet[PersonalToken]) -> None:
        count = queryset.filter(revoked_at=None).update(revoked_at=timezone.now())
        revoked(using=queryset.db)  # update() sends no post_save: no process may go on accepting them
        self.message_user(request, f"Revoked {count} token(s).", messages.SUCCESS)
