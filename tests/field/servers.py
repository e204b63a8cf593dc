"""The field project (tests/field/settings.py) under daphne, as its live tests start it."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.live.servers import ROOT, migrate, server_process


@contextmanager
def field_server(database: Path, superuser: tuple[str, str], **env: str) -> Iterator[str]:
    """Migrate ``database`` (SQLite), make ``superuser`` (email, password: the custom user signs in by email),
    serve the project under daphne on 127.0.0.1; yield its base URL. ``env`` adds to the server's environment."""
    environment = {
        "DJANGO_SETTINGS_MODULE": "tests.field.settings",
        "DJANGO_MCP_SQLITE": str(database),
        "DJANGO_SUPERUSER_PASSWORD": superuser[1],
        **env,
    }
    migrate(environment)
    subprocess.run(
        [sys.executable, "-m", "django", "createsuperuser", "--noinput", "--email", superuser[0]],
        cwd=ROOT,
        env={**os.environ, **environment},
        check=True,
        timeout=60,
    )
    args = ["-m", "daphne", "-b", "127.0.0.1", "-p", "{port}", "tests.field.asgi:application"]
    with server_process(args, env=environment, ready_path="/health/live") as base:
        yield base
