"""Running a client script and reading its summary (the live client tests share these)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.live.servers import ROOT

CLIENT_TIMEOUT_S = 120


def run_client(cmd: list[str], env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run a client script; its JSON summary (last stdout line) plus ``exit`` and ``stderr``."""
    proc = subprocess.run(
        cmd,
        cwd=ROOT,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=CLIENT_TIMEOUT_S,
        check=False,
    )
    lines = proc.stdout.strip().splitlines()
    try:
        summary: dict[str, Any] = json.loads(lines[-1])
    except (IndexError, ValueError):
        pytest.fail(
            f"{Path(cmd[1]).name} printed no JSON summary (exit {proc.returncode})\n"
            f"stdout:\n{proc.stdout[-3000:]}\nstderr:\n{proc.stderr[-3000:]}",
            pytrace=False,
        )
    summary["exit"] = proc.returncode
    summary["stderr"] = proc.stderr[-3000:]
    return summary


def assert_passed(summary: dict[str, Any]) -> None:
    __tracebackhide__ = True
    if not (summary["ok"] and summary["exit"] == 0):
        shown = {k: v for k, v in summary.items() if k != "stderr"}
        raise AssertionError(
            f"{summary['client']} failed at step {summary.get('failed_step', summary.get('failedStep'))!r}: "
            f"{summary.get('error')}\n{json.dumps(shown, indent=2)}\nstderr (tail):\n{summary['stderr'][-1500:]}"
        )
