"""``manage.py mcp_clear_tasks``: delete expired tasks (like ``clearsessions``; run it from cron)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from django_mcp.tasks.store.caps import recount, sweep_expired


class Command(BaseCommand):
    help = "Delete MCP tasks whose ttlMs has run out. Expired tasks are also swept lazily on access."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--recount",
            action="store_true",
            help="Also rebuild the cap counters (after tasks were deleted other than through django-mcp).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        deleted = sweep_expired()
        if options["recount"]:
            recount()
        if options["verbosity"] >= 1:
            self.stdout.write(f"Deleted {deleted} expired task(s).")
