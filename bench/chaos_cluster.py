"""The processes a chaos run starts, each its own and stopped by PID: a PostgreSQL primary with a synchronous
streaming standby (the app names both hosts, ``target_session_attrs=read-write``), a Redis, web workers under
daphne and uvicorn on fixed ports (a killed one comes back where it was, as under a supervisor), and the
worker fleet: ``manage.py mcp_db_worker``, an RQ worker on a Redis of its own that persists its jobs, and
a Celery worker on the machine's RabbitMQ (durable queues; never faulted here)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO

import httpx

from tests.live.postgres import PrivatePostgres
from tests.live.servers import ROOT, Redis, free_port, terminate

SETTINGS = """
import json, os
from tests.settings import *  # noqa: F403

ROOT_URLCONF = "bench.chaos_app"
DATABASES["default"].update(json.loads(os.environ["CHAOS_DATABASE"]))  # noqa: F405
DJANGO_MCP = {**DJANGO_MCP, **json.loads(os.environ["CHAOS_DJANGO_MCP"])}  # noqa: F405
"""
LEASE_SECONDS = 15.0
"""django-mcp's default ``TASK_LEASE_SECONDS``: the run judges the lease people deploy."""
QUEUED_TIMEOUT_SECONDS = 120.0
"""``TASK_QUEUED_TIMEOUT_SECONDS``: a fleet job lost with a worker killed after taking it, before the
task's body began, fails this long after its creation (the default 600 s would outlast the run)."""
RABBITMQ = "amqp://guest:guest@127.0.0.1:5672//"
CELERY = ["-m", "celery", "-A", "tests.celery_app"]


class Process:
    """One server or worker process on a fixed port (or none), started again in the same place."""

    def __init__(self, name: str, args: list[str], env: dict[str, str], port: int | None = None) -> None:
        self.name, self.args, self.env, self.port = name, args, env, port
        self.proc: subprocess.Popen[bytes] | None = None
        self.log: IO[bytes] = tempfile.TemporaryFile()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp-chaos"

    def start(self, wait: bool = True) -> None:
        command = [sys.executable, *(a.replace("{port}", str(self.port)) for a in self.args)]
        self.proc = subprocess.Popen(
            command, cwd=ROOT, env=self.env, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True
        )
        if wait and self.port is not None:
            deadline = time.monotonic() + 60
            while True:
                try:
                    httpx.get(f"http://127.0.0.1:{self.port}/health/live", timeout=1)
                    return
                except httpx.TransportError:
                    if self.proc.poll() is not None or time.monotonic() > deadline:
                        raise RuntimeError(f"{self.name} did not start") from None
                    time.sleep(0.1)

    def exited(self) -> bool:
        return self.proc is not None and self.proc.poll() is not None

    def output(self) -> str:
        self.log.seek(0)
        return self.log.read().decode(errors="replace")

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=10)

    def stop(self) -> None:
        if self.proc is not None:
            terminate(self.proc, timeout=20)


class Cluster:
    """Everything a run needs, in ``root``."""

    def __init__(self, root: Path, web: int = 3, fleet: int = 1, synchronous: bool = True) -> None:
        self.root = root
        self.synchronous = synchronous
        """Commits wait for the standby (no acknowledged write is lost by a failover), or stream to it after."""
        self.nodes = [PrivatePostgres(root, "pg-a"), PrivatePostgres(root, "pg-b")]
        self.primary = 0  # which node takes writes
        self.redis = Redis()
        self.rq_redis = Redis(persist_in=root / "rq-redis")
        self.web_count, self.fleet_count = web, fleet
        self.webs: list[Process] = []
        self.fleet: list[Process] = []

    def env(self) -> dict[str, str]:
        a, b = self.nodes
        database = {
            "HOST": "127.0.0.1,127.0.0.1",
            "PORT": f"{a.port},{b.port}",
            "CONN_MAX_AGE": 0,
            "CONN_HEALTH_CHECKS": True,
            "OPTIONS": {
                "pool": {"timeout": 5, "reconnect_timeout": 5},
                "connect_timeout": 2,
                "target_session_attrs": "read-write",
            },
        }
        mcp = {
            "TASK_LEASE_SECONDS": LEASE_SECONDS,
            "TASK_LEASE_RENEW_SECONDS": LEASE_SECONDS / 4,
            "TASK_QUEUED_TIMEOUT_SECONDS": QUEUED_TIMEOUT_SECONDS,
        }
        return {
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(self.root), str(ROOT)]),
            "DJANGO_SETTINGS_MODULE": "chaos_settings",
            "DJANGO_MCP_DATABASE": "postgres",
            "PGHOST": "127.0.0.1",
            "PGPORT": str(a.port),
            "PGUSER": "postgres",
            "PGDATABASE": "mcp",
            "REDIS_URL": f"redis://127.0.0.1:{self.redis.port}/0",
            "DJANGO_MCP_TEST_RQ_URL": f"redis://127.0.0.1:{self.rq_redis.port}/1",
            "DJANGO_MCP_TEST_CELERY_BROKER": RABBITMQ,
            "DJANGO_MCP_TEST_SIGNALS": "1",
            "CHAOS_DATABASE": json.dumps(database),
            "CHAOS_DJANGO_MCP": json.dumps(mcp),
        }

    def start(self) -> None:
        a, b = self.nodes
        a.init()
        a.start()
        a.execute("CREATE DATABASE mcp")
        b.init_standby_of(a)
        b.start()
        a.require_synchronous_standby(self.synchronous)
        self.wait_standby()
        self.redis.start()
        self.rq_redis.start()
        (self.root / "chaos_settings.py").write_text(SETTINGS)
        env = self.env()
        subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True, timeout=300)
        # Jobs an earlier run's killed worker left on the machine's RabbitMQ would name tasks of no one.
        subprocess.run([sys.executable, *CELERY, "purge", "-f", "-Q", "mcp"], cwd=ROOT, env=env, timeout=60)
        servers = [
            ["-m", "daphne", "-b", "127.0.0.1", "-p", "{port}", "tests.asgi:application"],
            ["-m", "uvicorn", "--host", "127.0.0.1", "--port", "{port}", "--no-access-log", "tests.asgi:application"],
        ]
        for i in range(self.web_count):
            self.webs.append(Process(f"web-{i}", servers[i % 2], env, free_port()))
        worker = ["manage.py", "mcp_db_worker", "--backend", "fleet", "--queue-name", "mcp", "--interval", "0.2"]
        worker += ["--no-startup-delay", "--no-reload"]
        self.fleet = [Process(f"db_worker-{i}", worker, env) for i in range(self.fleet_count)]
        rq = ["manage.py", "rqworker", "mcp", "--worker-class", "django_mcp.tasks.rq_worker.McpWorker"]
        rq += ["--job-class", "django_tasks_rq.Job"]
        celery = [*CELERY, "worker", "-Q", "mcp", "--pool", "threads", "--concurrency", "8", "-l", "warning"]
        celery += ["--without-gossip", "--without-mingle", "--without-heartbeat"]
        self.fleet += [Process("rq", rq, env), Process("celery", celery, env)]
        for process in [*self.webs, *self.fleet]:
            process.start()

    def wait_standby(self, timeout: float = 60) -> None:
        """Until the standby streams from the primary (and, if so configured, acknowledges every commit)."""
        deadline = time.monotonic() + timeout
        while self.nodes[self.primary].standbys(synchronous=self.synchronous) < 1:
            if time.monotonic() > deadline:
                raise RuntimeError("the standby did not attach")
            time.sleep(0.1)

    def fail_over(self) -> None:
        """The primary dies; the standby is promoted; the old node comes back as the new primary's standby."""
        old, new = self.nodes[self.primary], self.nodes[1 - self.primary]
        old.kill()
        new.promote()
        self.primary = 1 - self.primary
        old.init_standby_of(new)
        old.start()
        new.require_synchronous_standby(self.synchronous)
        self.wait_standby()

    def stop(self) -> None:
        for process in [*self.webs, *self.fleet]:
            process.stop()
        self.redis.stop()
        self.rq_redis.stop()
        for node in self.nodes:
            node.stop()
