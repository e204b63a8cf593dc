"""The one way between task code and the database: :class:`TaskStore` and its operations.

``operations`` is plain ORM code, the reference; ``prepared`` (SQL built once from the model) and
the reads on the event loop (``loop_sqlite``, ``loop_postgres``) are the fast paths that
``TASK_FAST_PATHS`` switches on.
"""

from .in_callers_thread import InCallersThread
from .task_store import TaskStore

__all__ = ["InCallersThread", "TaskStore"]
