"""``manage.py mcp_db_worker``: django_tasks_db's ``db_worker`` that waits out the database's outages.

``db_worker`` exits at the first error of an unreachable database, and an idle worker meets one as soon
as the database stops: the worker fleet's queued tasks then wait for nobody. This command takes the same
options and starts the worker again, backing off from 1 s to 30 s, until the database answers; SIGTERM
and SIGINT still stop it at once. Use it wherever docs/deployment.md says ``db_worker``.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from django.db import InterfaceError, OperationalError, connections
from django_tasks_db.management.commands import db_worker

logger = logging.getLogger("django_mcp.tasks")

MAX_BACKOFF_SECONDS = 30.0
"""The longest wait between two tries while the database stays unreachable."""


class Command(db_worker.Command):
    help = "Run a database background worker that waits out the database's outages (django_mcp's worker fleet)."

    def handle(self, *args: Any, **options: Any) -> None:
        delay = 1.0
        while True:
            started = time.monotonic()
            try:
                super().handle(*args, **options)
                return
            except (OperationalError, InterfaceError) as exc:
                connections.close_all()  # the next try opens new connections
                if time.monotonic() - started > 2 * MAX_BACKOFF_SECONDS:
                    delay = 1.0  # it ran a while: this is a new outage
                logger.warning("The database is unreachable (%s): the worker starts again in %.0f s", exc, delay)
                time.sleep(delay)
                delay = min(delay * 2, MAX_BACKOFF_SECONDS)
