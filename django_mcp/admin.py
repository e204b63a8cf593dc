"""Admin registrations (the tasks extension's lives in its subpackage)."""

from .tasks import admin as tasks_admin  # noqa: F401
