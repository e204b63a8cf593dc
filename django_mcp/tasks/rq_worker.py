"""An rq worker class for MCP task jobs: it waits out its Redis's restarts, and passes a warm shutdown
(SIGTERM/SIGINT) on to the work horse.

rq's own Worker retries only the wait for a job when Redis is unreachable: met anywhere else (checking a
running job's status, a heartbeat, the bookkeeping after a job) the error stops the worker, and nothing
runs the fleet's queue until something starts it again. Here every Redis command of the worker and its
horses retries until Redis answers. rq's own Worker also lets the horse run to completion on a warm
shutdown; the horse running an MCP task turns SIGTERM into the task's grace period (then "Task
interrupted"). Use with
``manage.py rqworker --worker-class django_mcp.tasks.rq_worker.McpWorker --job-class django_tasks_rq.Job``.
"""

import logging
import signal
from typing import Any

from redis.backoff import ExponentialBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.retry import Retry
from rq.worker import Worker

logger = logging.getLogger("django_mcp.tasks")

RETRY_CAP_SECONDS = 5.0
"""The longest wait between two tries to reach Redis while it stays unreachable."""


class _LoggedBackoff(ExponentialBackoff):
    """Exponential backoff that says when a command first meets an unreachable Redis (then retries quietly)."""

    def compute(self, failures: int) -> float:
        if failures == 1:
            logger.warning("Redis is unreachable: the rq worker waits for it, retrying every %.0f s at most", self._cap)
        return super().compute(failures)


class McpWorker(Worker):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Connections made from now on, by the worker, its pub/sub thread and its forked horses, retry
        # refused and dropped connections forever (a timeout still stops the worker, as in rq).
        pool = self.connection.connection_pool
        pool.connection_kwargs["retry"] = Retry(
            _LoggedBackoff(cap=RETRY_CAP_SECONDS, base=0.25), -1, supported_errors=(RedisConnectionError,)
        )
        pool.reset()

    def handle_warm_shutdown_request(self) -> None:
        super().handle_warm_shutdown_request()  # type: ignore[no-untyped-call]  # (rq leaves it unannotated)
        if self.horse_pid:
            self.kill_horse(sig=signal.SIGTERM)
