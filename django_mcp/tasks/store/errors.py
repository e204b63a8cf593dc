"""What the store's database errors mean: tables not migrated, the database lost, a cap reached."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

from django.db import (
    DatabaseError,
    InterfaceError,
    OperationalError,
)

from ...protocol.errors import INTERNAL_ERROR, McpJsonRpcError
from ...server.outages import throttle

logger = logging.getLogger("django_mcp.tasks")
T = TypeVar("T")

# PostgreSQL's SQLSTATEs for an undefined table and column; SQLite says it in words.
_UNDEFINED_SQLSTATES = frozenset({"42P01", "42703"})


_SQLITE_UNDEFINED = ("no such table: django_mcp_", "no such column: ", "table django_mcp_")

# MySQL's and MariaDB's error numbers: 1146 no such table, 1054 unknown column.
_MYSQL_UNDEFINED = frozenset({1146, 1054})


def unmigrated(exc: DatabaseError) -> bool:
    """Whether ``exc`` says a table or column of the tasks is missing: migrations not applied."""
    if _sqlstate(exc.__cause__) in _UNDEFINED_SQLSTATES or _mysql_errno(exc.__cause__) in _MYSQL_UNDEFINED:
        return True
    return str(exc).startswith(_SQLITE_UNDEFINED)


def tables_missing(exc: DatabaseError) -> McpJsonRpcError:
    """The answer to a request that met :func:`unmigrated`: the cause and the fix, not a retry hint."""
    throttle.log(logger, logging.ERROR, "unmigrated", "The django_mcp tables are missing or out of date: %s", exc)
    return McpJsonRpcError(
        INTERNAL_ERROR,
        "Server misconfigured: the task tables are missing or out of date; "
        "its operator must run `python manage.py migrate`",
        http_status=500,
    )


# Connection failures, as PostgreSQL's SQLSTATE class 08 and its "shutting down / cannot connect now"
# codes say; psycopg gives none (None) for a refused connection or its pool's timeout.
_LOST_CONNECTION_SQLSTATES = ("08", "57P01", "57P02", "57P03")
# MySQL's and MariaDB's client and server errors for the same: cannot connect (2002, 2003, 2005), the server
# gone or the connection lost (2006, 2013, 2055), the server shutting down (1053), too many connections
# (1040), a connection closed for inactivity (4031).
_LOST_CONNECTION_MYSQL = frozenset({1040, 1053, 2002, 2003, 2005, 2006, 2013, 2055, 4031})


class StillUnreachable(OperationalError):
    """Raised at once while an outage is known (:class:`KnownOutage`): a lost connection, like the one found."""


def lost_connection(exc: BaseException) -> bool:
    """Whether ``exc`` says the database cannot be reached (not a query's own error, not a SQLite lock)."""
    if isinstance(exc, StillUnreachable):
        return True
    cause = exc.__cause__  # the driver's own error, which Django's wrapper keeps
    if not isinstance(exc, OperationalError | InterfaceError) or cause is None:
        return False
    if type(cause).__module__.startswith("MySQLdb"):
        return _mysql_errno(cause) in _LOST_CONNECTION_MYSQL
    if not type(cause).__module__.startswith("psycopg"):
        return False  # SQLite (a lock is no outage), or a driver whose codes are not read here
    sqlstate = _sqlstate(cause)
    return sqlstate is None or sqlstate.startswith(_LOST_CONNECTION_SQLSTATES)


def _sqlstate(cause: BaseException | None) -> str | None:
    """A PostgreSQL driver error's SQLSTATE: psycopg's ``sqlstate``, psycopg2's ``pgcode``."""
    code = getattr(cause, "sqlstate", None) or getattr(cause, "pgcode", None)
    return code if isinstance(code, str) else None


_DEADLOCK_SQLSTATE = "40P01"
_DEADLOCK_MYSQL = 1213


def deadlocked(exc: BaseException) -> bool:
    """Whether ``exc`` says the database rolled the transaction back as a deadlock's victim (retry it)."""
    cause = exc.__cause__
    return _sqlstate(cause) == _DEADLOCK_SQLSTATE or _mysql_errno(cause) == _DEADLOCK_MYSQL


def _mysql_errno(cause: BaseException | None) -> int | None:
    """A mysqlclient error's number (its first argument)."""
    if cause is None or not type(cause).__module__.startswith("MySQLdb") or not cause.args:
        return None
    errno = cause.args[0]
    return errno if isinstance(errno, int) else None


async def aretried_while_down(work: Callable[[], Awaitable[T]], retry_for: float | None, what: str) -> T:
    """``work()``, tried again while the database is unreachable (backing off from 0.1 s to 5 s) for up to
    ``retry_for`` seconds (None: until it is back); another database error (a statement timeout, a full
    disk) for a minute at most. Past that the last error is raised."""
    loop = asyncio.get_running_loop()
    started, delay = loop.time(), 0.1
    while True:
        try:
            return await work()
        except (OperationalError, InterfaceError) as exc:
            limit = retry_for if lost_connection(exc) else 60.0 if retry_for is None else min(retry_for, 60.0)
            if limit is not None and loop.time() + delay > started + limit:
                raise
            logger.warning("%s: database unavailable, retrying in %.1f s", what, delay)
            await asyncio.sleep(delay)
            delay = min(delay * 2, 5.0)


class KnownOutage:
    """The database found unreachable: calls fail at once, and one a ``probe_seconds`` goes through to see.

    Without it, every concurrent request would queue for the pool's timeout in turn.
    """

    def __init__(self, probe_seconds: float = 1.0) -> None:
        self.probe_seconds = probe_seconds
        self._fail_until = 0.0  # monotonic; 0: not known to be down
        self.last_lost = float("-inf")
        """When a call last found the database unreachable (monotonic)."""

    def admit(self) -> None:
        """Raise ``OperationalError`` at once while the outage is known; let the next probe through."""
        if not self._fail_until:
            return
        now = time.monotonic()
        if now < self._fail_until:
            raise StillUnreachable("The database was unreachable a moment ago")
        self._fail_until = now + self.probe_seconds  # this call is the probe: the others fail at once meanwhile

    def failed(self, exc: BaseException) -> None:
        if lost_connection(exc):
            self.last_lost = time.monotonic()
            self._fail_until = self.last_lost + self.probe_seconds

    def succeeded(self) -> None:
        self._fail_until = 0.0


class TaskLimitReached(Exception):
    """Creating one more task would exceed a cap: ``which`` is ``"server"`` or ``"owner"``, ``limit`` its value."""

    def __init__(self, which: str, limit: int) -> None:
        super().__init__(f"{which} cap of {limit} reached")
        self.which = which
        self.limit = limit
