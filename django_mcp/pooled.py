"""Pooled database connections a request's thread took, given back before the request waits on other threads.

With Django's connection pool (PostgreSQL ``OPTIONS["pool"]``) a thread keeps the connection it took until
``close()``, for a request at its end. A request whose thread checked a bearer token or a permission in the
database, and which then waits for the tasks' store (whose threads take connections from the same pool),
would hold one connection while waiting for another: as many such requests at once as the pool has
connections, and the pool is deadlocked until its timeout.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import ParamSpec, TypeVar

from django.db import connections

P = ParamSpec("P")
R = TypeVar("R")


def give_back_pooled_connections() -> None:
    """Return this thread's pooled connections to their pool, unless a transaction holds them."""
    for connection in connections.all(initialized_only=True):
        if (
            connection.connection is not None
            and (connection.settings_dict.get("OPTIONS") or {}).get("pool")
            and not connection.in_atomic_block
        ):
            connection.close()


def gives_back_pooled_connections(fn: Callable[P, R]) -> Callable[P, R]:
    """``fn``, which then gives back the pooled connections it took (see the module's docstring)."""

    @wraps(fn)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(*args, **kwargs)
        finally:
            give_back_pooled_connections()

    return run
