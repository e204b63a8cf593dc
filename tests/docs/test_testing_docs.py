"""docs/testing.md's examples run as written: the sync one under pytest-django alone (no pytest-asyncio,
no ``asyncio_mode``), in a folder of its own, on the example project."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "testing.md"

pytestmark = pytest.mark.timeout(180)


def python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)\n```", PAGE.read_text(encoding="utf-8"), re.S)


def run_pytest(folder: Path, code: str, *plugins_off: str) -> subprocess.CompletedProcess[str]:
    (folder / "test_documented.py").write_text(code + "\n", encoding="utf-8")
    (folder / "pytest.ini").write_text("[pytest]\nDJANGO_SETTINGS_MODULE = example_project.settings\n")
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "DJANGO_MCP_DATABASE": "sqlite",
        "DJANGO_MCP_SQLITE": str(folder / "db.sqlite3"),
        "REDIS_URL": "",
        "DJANGO_SETTINGS_MODULE": "example_project.settings",
    }
    env.pop("DJANGO_MCP_TEST_SQLITE", None)
    off = [arg for plugin in plugins_off for arg in ("-p", f"no:{plugin}")]
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *off, "test_documented.py"],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=150,
    )


def test_the_sync_example_runs_under_pytest_django_alone(tmp_path: Path) -> None:
    sync = next(block for block in python_blocks() if "SyncMcpClient" in block)
    done = run_pytest(tmp_path, sync, "asyncio", "anyio")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "2 passed" in done.stdout, done.stdout[-1000:]


def test_the_async_example_runs_with_pytest_asyncio(tmp_path: Path) -> None:
    asynchronous = next(block for block in python_blocks() if "async with McpClient" in block)
    done = run_pytest(tmp_path, "pytestmark = __import__('pytest').mark.asyncio\n" + asynchronous)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "1 passed" in done.stdout, done.stdout[-1000:]
