"""The tasks extension's keys of ``DJANGO_MCP`` (the core's keys are in ``django_mcp/conf.py``)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from ..conf import settings_section


class TasksSettings(BaseModel):
    """The ``TASK_*`` keys of ``DJANGO_MCP``, in seconds. See docs/settings.md."""

    model_config = ConfigDict(frozen=True)

    TASK_LEASE_SECONDS: float = Field(default=15.0, gt=0)
    TASK_LEASE_RENEW_SECONDS: float = Field(default=5.0, gt=0)
    TASK_FINAL_WRITE_RETRY_SECONDS: float | None = Field(default=None, ge=0)
    TASK_STORE_THREADS: int = Field(default=4, ge=1, le=64)
    TASK_FAST_PATHS: bool = True
    """Whether the store runs its hottest statements as SQL prepared from the model and reads ``tasks/get``'s
    row on the event loop; False: the plain ORM in the store's threads for everything (the reference)."""
    TASK_LOOP_CONNECTIONS: int = Field(default=8, ge=0, le=64)
    """PostgreSQL: how many connections of its own each event loop opens (as needed, per database alias)
    for reads and final writes that would otherwise take a thread hop and a pool checkout; 0: none."""
    TASK_QUEUED_TIMEOUT_SECONDS: float | None = Field(default=600.0, gt=0)
    """A task queued for a worker fleet (``task_backend``) that no worker started within this long is
    failed ("No worker started the task within its queue timeout (600 s): is the fleet running?"); None: never."""
    TASK_INPUT_WAIT_SECONDS: float | None = Field(default=3600.0, gt=0)
    """A task that has waited in ``input_required`` this long without a change is shown stalled by the admin's
    task monitor (its client asked nothing more, or went away); None: never. Nothing fails it."""


get_tasks_settings = settings_section(TasksSettings)
"""The validated ``TASK_*`` settings (cached until ``DJANGO_MCP`` changes)."""
