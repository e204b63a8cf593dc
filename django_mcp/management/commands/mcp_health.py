"""``manage.py mcp_health``: the readiness checks of ``/health/ready``, as JSON; exit status 1 when not ready."""

from __future__ import annotations

import json
from typing import Any

from asgiref.sync import async_to_sync
from django.core.management.base import BaseCommand, CommandError
from django.urls import get_resolver

from django_mcp.health import areadiness


class Command(BaseCommand):
    help = "Check the database, the channel layer and (when configured) the worker fleet; exit 1 if one fails."

    def handle(self, *args: Any, **options: Any) -> None:
        get_resolver().url_patterns  # noqa: B018 - import the URLconf, which builds the servers (the fleet check)
        ok, checks = async_to_sync(areadiness)()
        self.stdout.write(json.dumps({check.name: check.to_json() for check in checks}, indent=2))
        if not ok:
            failed = ", ".join(check.name for check in checks if not check.ok)
            raise CommandError(f"Not ready: {failed}")
