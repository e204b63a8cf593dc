"""django-mcp's models. The tasks extension keeps its model in its own subpackage."""

from .tasks.models import Task, TaskStatus

__all__ = ["Task", "TaskStatus"]
