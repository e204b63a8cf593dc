"""How the Python client scripts end: run the client, then print one JSON summary line, whatever happened.

Standard library only: each script runs in its own client's venv, and imports this from its own folder.
"""

from __future__ import annotations

import json
import sys
import traceback
from collections.abc import Callable
from typing import Any


def first_error(exc: BaseException) -> BaseException:
    """The first leaf of an exception group (anyio wraps errors raised inside the client's task group)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def run_and_report(summary: dict[str, Any], run: Callable[[], object]) -> int:
    """Call ``run()``, record a failure in ``summary`` (its JSON-RPC error too), print the summary; the exit code."""
    try:
        run()
    except BaseException as exc:
        error = first_error(exc)
        error_data = getattr(error, "error", None)  # an MCPError carries the JSON-RPC error
        summary["error"] = f"{type(error).__name__}: {getattr(error_data, 'message', None) or error}"
        if error_data is not None:
            summary["error_code"] = getattr(error_data, "code", None)
        summary["traceback"] = traceback.format_exception(error)[-3:]
    sys.stdout.write(json.dumps(summary) + "\n")
    return 0 if summary["ok"] else 1
