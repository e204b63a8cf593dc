"""Signed-in requests that create tasks, more at once than the connection pool holds, on a real server.

Each request checks its bearer token in the database in its own thread, then waits for the tasks' store,
whose threads take connections from the same pool. A request thread that kept its connection while
waiting deadlocked the pool (4 connections by default) until its timeout: 503 "Database unavailable".
Runs on PostgreSQL (Django's pool); every process it starts is stopped by PID.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import secrets
from collections.abc import AsyncIterator
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
POOL = 4  # connections: the pool's default size
AT_ONCE = 6 * POOL
MONITOR_EVENTS = "/admin/django_mcp/taskmonitor/events/"


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


@contextlib.asynccontextmanager
async def signed_in_browser(base: str) -> AsyncIterator[httpx.AsyncClient]:
    """A staff member signed in through the admin's login form: a session cookie, read from the database."""
    from django.contrib.auth.models import User

    await sync_to_async(User.objects.create_superuser)("watcher", "w@example.com", "pw-for-watcher")
    async with httpx.AsyncClient(base_url=base, follow_redirects=True, timeout=30) as browser:
        login = await browser.get("/admin/login/")
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', login.text)
        assert token is not None
        form = {"csrfmiddlewaretoken": token.group(1), "username": "watcher", "password": "pw-for-watcher"}
        assert (await browser.post("/admin/login/?next=/admin/", data=form)).url.path == "/admin/"
        yield browser


async def test_open_task_monitors_hold_no_pooled_connection(worker):
    """Each monitor's stream reads its session and permission in the database when it opens; a stream that
    kept that connection for as long as it stays open would take the pool from everything else."""
    async with signed_in_browser(worker.running.base) as browser, contextlib.AsyncExitStack() as monitors:
        for _ in range(2 * POOL):
            stream = await monitors.enter_async_context(browser.stream("GET", MONITOR_EVENTS))
            assert stream.status_code == 200, (await stream.aread())[:300]
            assert stream.headers["content-type"] == "text/event-stream"
        body = request_body("tools/call", {"name": "quick", "arguments": {}}, capabilities=EXT)
        answer = await browser.post("/mcp-tasks/", content=json.dumps(body), headers=headers_for(body))
        assert answer.status_code == 200 and answer.json()["result"]["resultType"] == "task", answer.text[:300]
    assert "couldn't get a connection" not in worker.log()


async def test_task_creations_of_a_session_signed_in_client_beyond_the_pool_size_all_succeed(worker):
    """A browser client's session cookie is read in each request's thread, before the request waits on the
    tasks' store: the same pool, as with a bearer token."""
    body = request_body("tools/call", {"name": "quick", "arguments": {}}, capabilities=EXT)
    async with signed_in_browser(worker.running.base) as browser:
        answers = await asyncio.gather(
            *(browser.post("/mcp-tasks/", content=json.dumps(body), headers=headers_for(body)) for _ in range(AT_ONCE))
        )
    assert [a.status_code for a in answers] == [200] * AT_ONCE, [a.text[:200] for a in answers if a.status_code != 200]
    assert "couldn't get a connection" not in worker.log()
