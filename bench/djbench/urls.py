"""``/mcp/``: the django_mcp bench server; ``/mcp-auth/``: the same behind ``BearerAuth``.
``/floor/``: a bare async view answering fixed bytes.

``/bench/queries/``: how many SQL statements this process sent (only counted with ``BENCH_COUNT_QUERIES=1``).
``/admin/``: with ``BENCH_MONITOR=1`` only.
"""

from __future__ import annotations

import os

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.urls import path
from django.views.decorators.csrf import csrf_exempt

from django_mcp import McpServer
from django_mcp.auth import BearerAuth, PersonalTokenVerifier
from django_mcp.tasks import McpTasks

from .querycount import queries
from .tools import tools


def _tasks() -> McpTasks:
    return McpTasks(
        max_tasks=2_000_000,
        max_tasks_per_owner=None,  # the load generator is one caller, and the 1M phase one owner's rows
        ttl_seconds=3600,
        poll_interval_seconds=int(os.environ.get("BENCH_POLL_MS", "100")) / 1000,
    )


server = McpServer(tools=tools, extension_plugins=[_tasks()], urls_namespace="bench_mcp")
# The same tools behind sign-in: every request brings a personal token (the auth targets).
signed_in_server = McpServer(
    tools=tools,
    extension_plugins=[_tasks()],
    auth=BearerAuth(verifiers=[PersonalTokenVerifier()]),
    urls_namespace="bench_mcp_auth",
)

# The bytes django_mcp answers to tasks/get for a completed bench task (same length and shape).
FLOOR_BODY = (
    b'{"jsonrpc":"2.0","id":1,"result":{"taskId":"0b9c6b53-5d3e-4a8e-9d56-1f1b8e6a2c41","status":"completed",'
    b'"createdAt":"2026-12-02T16:00:00.000Z","lastUpdatedAt":"2026-12-02T16:00:00.001Z","ttlMs":3600000,'
    b'"pollIntervalMs":100,"result":{"content":[{"type":"text","text":"done"}],"resultType":"complete"},'
    b'"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":'
    b'{"name":"bench-django-mcp","version":"0.1.0"}}}}'
)


@csrf_exempt
async def floor(request: HttpRequest) -> HttpResponse:
    return HttpResponse(FLOOR_BODY, content_type="application/json")


urlpatterns = [
    path("mcp/", server.urls),
    path("mcp-auth/", signed_in_server.urls),
    path("floor/", floor),
    path("bench/queries/", queries),  # the SQL statements this process sent (BENCH_COUNT_QUERIES=1)
]
if settings.MONITOR:  # bench/monitor_viewers.py
    from django.contrib import admin

    urlpatterns.append(path("admin/", admin.site.urls))
