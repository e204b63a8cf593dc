"""A primary/replica router as a team has one: reads from the replica, django_mcp pinned to the primary.

django_mcp's tasks must be read where they are written (check django_mcp.W012 says so); the
replica here is a test mirror of the primary, as Django's own replica tests set it up.
"""

from __future__ import annotations

from typing import Any

PINNED_TO_PRIMARY = {"django_mcp", "oauth2_provider", "sessions"}


class PrimaryReplicaRouter:
    def db_for_read(self, model: type[Any], **hints: Any) -> str:
        return "default" if model._meta.app_label in PINNED_TO_PRIMARY else "replica"

    def db_for_write(self, model: type[Any], **hints: Any) -> str:
        return "default"

    def allow_relation(self, obj1: Any, obj2: Any, **hints: Any) -> bool:
        return True

    def allow_migrate(self, db: str, app_label: str, **hints: Any) -> bool:
        return db == "default"
