"""``manage.py mcp_clear_tasks``: delete expired tasks (like ``clearsessions``; run it from cron)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from django_mcp.tasks.store import sweep_expired


class Command(BaseCommand):
    help = "Delete MCP tasks whose ttlMs has run out. Expired tasks are also swept lazily on access."

    def handle(self, *args: Any, **options: Any) -> None:
        deleted = sweep_expired()
        if options["verbosity"] >= 1:
            self.stdout.write(f"Deleted {deleted} expired task(s).")
