"""Personal tokens: for scripts, CI and clients that cannot do OAuth (e.g. a Claude Code ``--header``)."""

from __future__ import annotations

import secrets
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import models
from django.utils import timezone

from .digests import PERSONAL_TOKEN_PREFIX, token_digest


class PersonalToken(models.Model):
    """A bearer token owned by a user: shown once when made, stored as its SHA-256, scoped, expiring, revocable."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="mcp_personal_tokens",
        help_text="Whom the token acts for: its tool calls and tasks are this user's.",
    )
    name = models.CharField(max_length=100, help_text="What it is for, e.g. “nightly report job”.")
    digest = models.CharField(max_length=64, unique=True, editable=False)
    prefix = models.CharField(
        max_length=16, editable=False, help_text="The token's first characters, to tell tokens apart."
    )
    scope = models.CharField(max_length=500, default="mcp", help_text="Space-separated OAuth scopes the token carries.")
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        app_label = "django_mcp"
        ordering = ("-created_at",)

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    @property
    def scope_list(self) -> list[str]:
        return self.scope.split()

    @property
    def is_usable(self) -> bool:
        return self.revoked_at is None and self.expires_at > timezone.now()

    @classmethod
    def issue(
        cls, user: Any, name: str, *, scope: str = "mcp", lifetime: timedelta = timedelta(days=90)
    ) -> tuple[PersonalToken, str]:
        """Make a token for ``user``; returns the row and the token, which is not stored and not shown again."""
        token = PERSONAL_TOKEN_PREFIX + secrets.token_urlsafe(32)
        row = cls.objects.create(
            user=user,
            name=name,
            scope=" ".join(scope.split()),
            digest=token_digest(token),
            prefix=token[: len(PERSONAL_TOKEN_PREFIX) + 8],
            expires_at=timezone.now() + lifetime,
        )
        return row, token

    def revoke(self) -> None:
        """Refuse the token from now on."""
        if self.revoked_at is None:
            self.revoked_at = timezone.now()
            self.save(update_fields=["revoked_at"])
