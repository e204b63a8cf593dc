"""Admin registrations (the tasks extension's and sign-in's live in their subpackages)."""

from .auth import admin as auth_admin  # noqa: F401
from .tasks import admin as tasks_admin  # noqa: F401
