"""The store's operations for a sync caller in a request (the admin): in its thread, on its connection.

Under ``ATOMIC_REQUESTS`` that connection is in the request's transaction, which on SQLite may hold
the write lock from its start: a store thread's own connection would wait for it until "database is
locked". Called through ``async_to_sync`` from that thread, ``sync_to_async`` runs each operation
back in it.
"""

from __future__ import annotations

from typing import Any

from asgiref.sync import sync_to_async

from ..models import Task
from . import operations


class InCallersThread:
    """The operations cancelling needs, as :class:`TaskStore` has them, run in the calling thread."""

    async def acancel_queued(self, task_id: Any) -> Task | None:
        return await sync_to_async(operations.cancel_queued)(task_id)

    async def areload(self, task_id: Any) -> Task | None:
        return await sync_to_async(operations.reload)(task_id)

    async def arequest_cancel(self, task_id: Any, owner: str | None) -> Task | None:
        return await sync_to_async(operations.request_cancel)(task_id, owner)
