"""Signed-in requests that create tasks, more at once than the connection pool holds, on a real server.

Each request checks its bearer token in the database in its own thread, then waits for the tasks' store,
whose threads take connections from the same pool. A request thread that kept its connection while
waiting deadlocked the pool (4 connections by default) until its timeout: 503 "Database unavailable".
Runs on PostgreSQL (Django's pool); every process it starts is stopped by PID.
"""

from __future__ import annotations

import asyncio
import json
import secrets
from datetime import timedelta

import httpx
import pytest
from asgiref.sync import sync_to_async

from tests.live.servers import CLUSTER_MARKS, SERVER_DATABASE, Daphne, Redis, cluster_env
from tests.wire import headers_for, request_body

pytestmark = [
    *CLUSTER_MARKS,
    pytest.mark.skipif(SERVER_DATABASE != "postgres", reason="Django's connection pool is PostgreSQL's"),
]

EXT = {"extensions": {"io.modelcontextprotocol/tasks": {}}}
AT_ONCE = 24  # six times the pool's 4 connections


@pytest.fixture
def worker(django_db_setup, django_db_blocker):
    from django.db import connection

    with django_db_blocker.unblock():
        db_name = connection.settings_dict["NAME"]
    redis = Redis()
    redis.start()
    daphne = Daphne(cluster_env(db_name, redis, lease=15, grace=1), quiet=True)
    try:
        yield daphne.start()
    finally:
        daphne.stop()
        redis.stop()


def _tokens(resource: str, count: int) -> list[str]:
    """``count`` access tokens of different users: none is remembered yet, each request checks its own."""
    from django.contrib.auth.models import User
    from django.utils import timezone
    from oauth2_provider.models import AccessToken

    tokens = []
    for n in range(count):
        user = User.objects.create_user(f"pool{n}")
        raw = secrets.token_urlsafe(24)
        AccessToken.objects.create(
            user=user, token=raw, scope="mcp", resource=[resource], expires=timezone.now() + timedelta(hours=1)
        )
        tokens.append(raw)
    return tokens


async def test_signed_in_task_creations_beyond_the_pool_size_all_succeed(worker):
    url = worker.running.base + "/mcp-oauth"
    tokens = await sync_to_async(_tokens)(url, AT_ONCE)
    body = request_body("tools/call", {"name": "slow_report", "arguments": {"n": 1}}, capabilities=EXT)

    async def create(client: httpx.AsyncClient, token: str) -> httpx.Response:
        headers = {**headers_for(body), "Authorization": f"Bearer {token}"}
        return await client.post(url, content=json.dumps(body), headers=headers)

    async with httpx.AsyncClient(timeout=30) as client:
        answers = await asyncio.gather(*(create(client, token) for token in tokens))
    statuses = [answer.status_code for answer in answers]
    assert statuses == [200] * AT_ONCE, [(a.status_code, a.text[:200]) for a in answers if a.status_code != 200]
    assert all(answer.json()["result"]["resultType"] == "task" for answer in answers)
    assert "couldn't get a connection" not in worker.log()
