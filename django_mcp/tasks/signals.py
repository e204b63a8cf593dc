"""Django signals of the tasks extension (``django_mcp.tasks.task_created`` …), each sent once,
from the process where the event happened, with ``sender`` the :class:`~django_mcp.models.Task` class."""

from __future__ import annotations

from django.dispatch import Signal

task_created = Signal()
"""A task was committed for a ``tools/call``: keyword arguments ``task`` (the row) and ``request``."""

task_changed = Signal()
"""A task's status, statusMessage or input requests changed: keyword argument ``task`` (as the change left it)."""

task_finished = Signal()
"""A task reached a terminal status (completed, failed, cancelled): keyword argument ``task``.
``task_changed`` is sent for that change too."""
