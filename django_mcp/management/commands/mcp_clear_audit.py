"""``manage.py mcp_clear_audit``: delete audit rows past ``AUDIT_RETENTION_SECONDS`` (run it from cron)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from django_mcp.audit import sweep
from django_mcp.conf import get_settings


class Command(BaseCommand):
    help = "Delete MCP audit rows older than AUDIT_RETENTION_SECONDS. Writing rows also sweeps, once a minute."

    def handle(self, *args: Any, **options: Any) -> None:
        deleted = sweep(get_settings().AUDIT_RETENTION_SECONDS)
        if options["verbosity"] >= 1:
            self.stdout.write(f"Deleted {deleted} audit row(s).")
