"""django-mcp's models. The tasks extension and sign-in keep theirs in their own subpackages; the audit
log's is in ``audit.py``."""

from .audit import ToolCall
from .auth.models import PersonalToken
from .monitor import TaskMonitor
from .tasks.models import Task, TaskStatus

__all__ = ["PersonalToken", "Task", "TaskMonitor", "TaskStatus", "ToolCall"]
