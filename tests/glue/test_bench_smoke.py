"""The benchmark harness's ``--smoke`` mode, so it cannot rot: it starts a real django_mcp server and
the Django floor (daphne, SQLite), measures them, and writes its JSON and markdown table."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.live, pytest.mark.timeout(200)]

ROOT = Path(__file__).resolve().parents[2]


def test_bench_smoke_mode_measures_django_mcp_and_the_floor(tmp_path):
    out, work = tmp_path / "out", tmp_path / "work"
    run = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "run.py"), "--smoke", "--out", str(out), "--work", str(work)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-4000:]

    data = json.loads((out / "results.json").read_text())
    assert data["meta"]["mode"] == "smoke"
    results = {(r["target"], r["scenario"]): r["result"] for r in data["records"]}
    for target in ("django_mcp daphne sqlite", "floor daphne"):
        get = results[(target, "tasks/get")]
        assert get["requests"] > 0 and get["rps"] > 0 and get["errors"] == 0, get
    listen = results[("django_mcp daphne sqlite", "e2e listen")]
    assert listen["tasks"] > 0 and listen["errors"] == 0 and listen["unsupported"] is None, listen
    assert data["summary"] and data["goals"]  # the report step ran

    table = (out / "results.md").read_text()
    assert "## Goals" in table
    assert "| floor daphne |" in table
    assert "| django_mcp daphne sqlite |" in table
