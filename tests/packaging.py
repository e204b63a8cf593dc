"""The package as users get it: a wheel and an sdist built by ``python -m build``, and a fresh venv with the wheel."""

from __future__ import annotations

import os
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def build(outdir: Path) -> tuple[Path, Path]:
    """``python -m build`` of the checkout into ``outdir``: (the wheel, the sdist)."""
    subprocess.run(
        [sys.executable, "-m", "build", "--outdir", str(outdir), str(ROOT)],
        check=True,
        capture_output=True,
        timeout=600,
    )
    [wheel] = outdir.glob("*.whl")
    [sdist] = outdir.glob("*.tar.gz")
    return wheel, sdist


def fresh_venv(folder: Path, *requirements: str) -> Path:
    """A new venv (no site packages of this suite) with ``requirements`` installed; its python."""
    venv.create(folder, with_pip=True)
    python = folder / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", *requirements],
        check=True,
        capture_output=True,
        timeout=600,
        env=env,
    )
    return python
