"""Counts every SQL statement this server process sends (the "parked tasks" scenario).

Switched on by ``BENCH_COUNT_QUERIES=1`` (``BenchConfig.ready``): every database connection, in
every thread (request threads, the tasks store's threads), gets an execute wrapper that counts its
statements, grouped by their first words. ``/bench/queries/`` answers the totals as JSON. Off, it
costs nothing: no wrapper is installed and the view answers ``{"enabled": false}``.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections import Counter
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.views.decorators.csrf import csrf_exempt

_lock = threading.Lock()
_counts: Counter[str] = Counter()
_enabled = False
_SHAPE = re.compile(r"\s+")
_SAVEPOINT = re.compile(r"\"s\d+_x\d+\"")


def _shape(sql: str) -> str:
    """The statement's kind and table, enough to tell the maintenance loop from a per-task poll."""
    words = _SAVEPOINT.sub("s…", _SHAPE.sub(" ", sql.strip()))
    return words[:120]


def _count(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
    with _lock:
        _counts[_shape(sql)] += 1
    return execute(sql, params, many, context)


def _install(sender: Any, connection: Any, **kwargs: Any) -> None:
    if _count not in connection.execute_wrappers:
        connection.execute_wrappers.append(_count)


def enable() -> None:
    global _enabled
    from django.db.backends.signals import connection_created

    _enabled = True
    connection_created.connect(_install, weak=False, dispatch_uid="bench-querycount")


@csrf_exempt
def queries(request: HttpRequest) -> HttpResponse:
    with _lock:
        snapshot = dict(_counts)
    body = {
        "enabled": _enabled,
        "total": sum(snapshot.values()),
        "by_statement": dict(sorted(snapshot.items(), key=lambda kv: -kv[1])[:30]),
        "at": time.time(),
    }
    return HttpResponse(json.dumps(body), content_type="application/json")
