"""``manage.py mcp_clear_registrations``: delete anonymous client registrations that never got a token."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.apps import apps
from django.core.management.base import BaseCommand, CommandError, CommandParser

from django_mcp.auth.conf import get_auth_settings
from django_mcp.auth.registration import clear_stale_registrations


class Command(BaseCommand):
    help = (
        "Delete clients registered anonymously (dynamic client registration) that never obtained a token and are "
        "older than OAUTH_REGISTRATION_RETENTION_DAYS (run it from cron)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--days", type=float, default=None, help="Age in days (default: OAUTH_REGISTRATION_RETENTION_DAYS)."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if not apps.is_installed("oauth2_provider"):
            raise CommandError("django-oauth-toolkit (oauth2_provider) is not in INSTALLED_APPS: nothing registers")
        days = options["days"] if options["days"] is not None else get_auth_settings().OAUTH_REGISTRATION_RETENTION_DAYS
        if days < 0:
            raise CommandError("--days must be 0 or more")
        deleted = clear_stale_registrations(timedelta(days=days))
        if options["verbosity"] >= 1:
            self.stdout.write(f"Deleted {deleted} stale client registration(s).")
