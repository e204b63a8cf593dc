"""An rq worker class for MCP task jobs: a warm shutdown (SIGTERM/SIGINT) is passed to the work horse.

rq's own Worker lets the horse run to completion on a warm shutdown; the horse running an MCP task
turns SIGTERM into the task's grace period (then "Task interrupted"). Use with
``manage.py rqworker --worker-class django_mcp.tasks.rq_worker.McpWorker --job-class django_tasks_rq.Job``.
"""

import signal

from rq.worker import Worker


class McpWorker(Worker):
    def handle_warm_shutdown_request(self) -> None:
        super().handle_warm_shutdown_request()  # type: ignore[no-untyped-call]  # (rq leaves it unannotated)
        if self.horse_pid:
            self.kill_horse(sig=signal.SIGTERM)
