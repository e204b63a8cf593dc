"""PostgreSQL clusters of our own (``initdb``/``postgres`` from ``/usr/lib/postgresql/*/bin``), in a directory of
ours on a free port, so stopping one disturbs nothing else: the outage tests' single node, and the chaos
harness's primary with a streaming standby that can be promoted. Every process is stopped by PID."""

from __future__ import annotations

import glob
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

from tests.live.servers import free_port, terminate

PG_BIN = next(iter(sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True)), "")


class PrivatePostgres:
    """A PostgreSQL cluster of our own in ``root``; as root, it runs as the ``postgres`` user."""

    def __init__(self, root: Path, name: str = "pgdata") -> None:
        self.root = root
        self.data = root / name
        self.log_path = root / f"{name}.log"
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None
        self.as_user: dict[str, Any] = {"user": "postgres", "group": "postgres"} if os.geteuid() == 0 else {}

    def init(self) -> None:
        self._own_directory()
        self._run(
            [f"{PG_BIN}/initdb", "-D", str(self.data), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"]
        )

    def init_standby_of(self, primary: PrivatePostgres) -> None:
        """A fresh copy of ``primary`` (``pg_basebackup -R``) that streams from it once started."""
        if self.data.exists():
            shutil.rmtree(self.data)
        self._own_directory()
        self._run(
            [
                f"{PG_BIN}/pg_basebackup",
                *("-h", "127.0.0.1", "-p", str(primary.port), "-U", "postgres"),
                *("-D", str(self.data), "-R", "-X", "stream", "--no-sync", "-c", "fast"),
            ]
        )

    def start(self) -> None:
        log = self.log_path.open("ab")
        self.proc = subprocess.Popen(
            [
                f"{PG_BIN}/postgres",
                *("-D", str(self.data), "-p", str(self.port), "-k", str(self.root)),
                *("-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "max_connections=100"),
                *("-c", "wal_level=replica", "-c", "max_wal_senders=5", "-c", "hot_standby=on"),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            **self.as_user,
        )
        log.close()
        deadline = time.monotonic() + 30
        while not self.accepts():
            assert self.proc.poll() is None, self.log_path.read_text()[-2000:]
            assert time.monotonic() < deadline, "postgres did not start"
            time.sleep(0.05)

    def accepts(self) -> bool:
        import psycopg

        try:
            psycopg.connect(
                host="127.0.0.1", port=self.port, user="postgres", dbname="postgres", connect_timeout=1
            ).close()
            return True
        except psycopg.OperationalError:
            return False

    def execute(self, sql: str, database: str = "postgres") -> list[tuple[Any, ...]]:
        import psycopg

        with psycopg.connect(
            host="127.0.0.1", port=self.port, user="postgres", dbname=database, autocommit=True, connect_timeout=3
        ) as conn:
            cursor = conn.execute(sql)
            return cursor.fetchall() if cursor.description else []

    def require_synchronous_standby(self, required: bool) -> None:
        """Commits wait for a standby's acknowledgement (``synchronous_standby_names = '*'``), or not."""
        self.execute(f"ALTER SYSTEM SET synchronous_standby_names = '{'*' if required else ''}'")
        self.execute("SELECT pg_reload_conf()")

    def standbys(self, synchronous: bool = True) -> int:
        """How many standbys stream from this node (only those acknowledging commits, if ``synchronous``)."""
        wanted = "sync_state = 'sync'" if synchronous else "state = 'streaming'"
        return len(self.execute(f"SELECT 1 FROM pg_stat_replication WHERE {wanted}"))

    def promote(self) -> None:
        self._run([f"{PG_BIN}/pg_ctl", "promote", "-D", str(self.data), "-w", "-t", "30"])

    def stop(self) -> None:
        """Fast shutdown (SIGINT) of our postmaster, by PID."""
        if self.proc is not None:
            terminate(self.proc, signal.SIGINT, timeout=30)
        self.proc = None

    def kill(self) -> None:
        """SIGKILL of our postmaster, as a machine that died (its children go when they notice)."""
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait(timeout=10)
        self.proc = None

    def _own_directory(self) -> None:
        self.data.mkdir(parents=True, exist_ok=True)
        if self.as_user:
            shutil.chown(self.root, "postgres", "postgres")
            shutil.chown(self.data, "postgres", "postgres")
        self.data.chmod(0o700)

    def _run(self, command: list[str]) -> None:
        subprocess.run(command, check=True, capture_output=True, timeout=120, **self.as_user)
