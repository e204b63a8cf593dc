"""The tasks extension's method params: ``tasks/get``, ``tasks/update``, ``tasks/cancel`` and the listen filter."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import Field, StrictStr

from ..server.params import Params
from . import gauges  # noqa: F401  (declares the tasks' OpenTelemetry gauges)

if TYPE_CHECKING:
    pass


MAX_WATCHED_TASKS = 1000
"""The most tasks one listen stream may watch (``taskIds``)."""


class TaskIdParams(Params):
    taskId: StrictStr  # noqa: N815 - the wire name


class UpdateParams(TaskIdParams):
    inputResponses: dict[str, Any]  # noqa: N815


class TaskIdsFilter(Params):
    taskIds: list[StrictStr] = Field(default=[], max_length=MAX_WATCHED_TASKS)  # noqa: N815
