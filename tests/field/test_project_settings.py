"""The endpoint, its metadata, health and sign-in views under settings older projects carry.

In-process, on the suite's own project with one setting changed at a time; tests/field/test_live.py
runs the whole field project (tests/field/settings.py) for real.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth import get_user_model
from django.db import connections
from django.test import AsyncClient, Client

from django_mcp.conf import get_settings
from django_mcp.shared_caches import shared_cache
from django_mcp.tasks.monitoring import VIEWERS_KEY, feed
from django_mcp.testing import McpClient

pytestmark = pytest.mark.django_db(transaction=True)

LOGIN_REQUIRED = "django.contrib.auth.middleware.LoginRequiredMiddleware"


@pytest.fixture
def atomic_requests() -> Iterator[None]:
    """``DATABASES["default"]["ATOMIC_REQUESTS"] = True`` (the handler reads it from the connection settings)."""
    database = connections.settings["default"]
    database["ATOMIC_REQUESTS"] = True
    try:
        yield
    finally:
        database["ATOMIC_REQUESTS"] = False


@pytest.fixture
def login_required(settings: pytest.FixtureRequest) -> None:
    settings.MIDDLEWARE = [*settings.MIDDLEWARE, LOGIN_REQUIRED]  # type: ignore[attr-defined]


@pytest.mark.usefixtures("atomic_requests")
async def test_the_endpoint_answers_under_atomic_requests_in_both_eras() -> None:
    async with McpClient("/mcp") as mcp:
        assert await mcp.alist_tools()
    async with McpClient("/mcp", protocol_version="2025-11-25") as mcp:
        assert await mcp.alist_tools()


@pytest.mark.usefixtures("atomic_requests")
async def test_a_task_runs_and_is_read_under_atomic_requests() -> None:
    async with McpClient("/mcp-tasks") as mcp:
        handle = await mcp.astart_task("quick", {"text": "under ATOMIC_REQUESTS"})
        task = await mcp.await_task(handle["taskId"], "completed")
    assert task["status"] == "completed"
    assert task["result"]["content"][0]["text"] == "task:under ATOMIC_REQUESTS"


@pytest.mark.usefixtures("atomic_requests")
@pytest.mark.parametrize("path", ["/health/live", "/health/ready", "/.well-known/oauth-protected-resource/mcp-oauth"])
async def test_health_and_metadata_answer_under_atomic_requests(path: str) -> None:
    response = await AsyncClient().get(path)
    assert response.status_code == 200, response.content


@pytest.mark.usefixtures("login_required")
async def test_login_required_middleware_lets_clients_reach_the_endpoint() -> None:
    anonymous = await AsyncClient().post("/mcp", b"{}", content_type="application/json")
    assert anonymous.status_code == 400  # the endpoint's own JSON-RPC answer, not a redirect to a login page
    assert anonymous.json()["error"]["code"]
    async with McpClient("/mcp") as mcp:
        assert await mcp.alist_tools()


@pytest.mark.usefixtures("login_required")
async def test_login_required_middleware_leaves_the_challenge_to_the_endpoints_auth() -> None:
    response = await AsyncClient().post("/mcp-oauth", b"{}", content_type="application/json")
    assert response.status_code == 401
    assert response.headers["WWW-Authenticate"].startswith("Bearer ")


@pytest.mark.usefixtures("login_required")
@pytest.mark.parametrize(
    "path",
    [
        "/.well-known/oauth-protected-resource/mcp-oauth",
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-authorization-server",
        "/health/live",
        "/health/ready",
        "/o/login/",
    ],
)
def test_login_required_middleware_leaves_metadata_health_and_login_open(path: str) -> None:
    response = Client().get(path)
    assert response.status_code == 200, (response.status_code, response.headers.get("Location"))


@pytest.mark.usefixtures("login_required")
@pytest.mark.parametrize("path", ["/o/token/", "/o/revoke_token/", "/o/introspect/"])
def test_login_required_middleware_lets_clients_post_to_the_token_endpoints(path: str) -> None:
    response = Client().post(path, {"grant_type": "authorization_code", "token": "x"})
    assert response.status_code in (400, 401, 403), (response.status_code, response.headers.get("Location"))
    assert "Location" not in response.headers


@pytest.mark.usefixtures("login_required")
def test_login_required_middleware_lets_clients_register() -> None:
    body = {"redirect_uris": ["http://127.0.0.1:5555/callback"], "token_endpoint_auth_method": "none"}
    response = Client().post("/o/register/", body, content_type="application/json")
    assert response.status_code == 201, response.content


@pytest.mark.usefixtures("login_required")
def test_the_consent_page_still_sends_a_stranger_to_the_sign_in_page_of_django_mcp() -> None:
    redirect = "http://127.0.0.1:5555/callback"
    body = {"redirect_uris": [redirect], "token_endpoint_auth_method": "none"}
    client_id = Client().post("/o/register/", body, content_type="application/json").json()["client_id"]
    query = {"client_id": client_id, "response_type": "code", "redirect_uri": redirect}
    response = Client().get("/o/authorize/", {**query, "code_challenge": "c" * 43, "code_challenge_method": "S256"})
    assert response.status_code == 302
    assert response.headers["Location"].startswith("/o/login/?next=/o/authorize/")


@pytest.mark.usefixtures("atomic_requests", "login_required")
def test_the_endpoints_own_pages_stay_behind_login_required_middleware() -> None:
    # Only client-facing views are marked: the admin still asks a person to sign in.
    response = Client().get("/admin/django_mcp/task/")
    assert response.status_code == 302
    assert "/login/" in response.headers["Location"]


@pytest.fixture
def local_time_without_tz(settings: pytest.FixtureRequest) -> None:
    """``USE_TZ = False`` with a ``TIME_ZONE`` an hour off UTC in winter, as older projects run.

    Only SQLite converts by the setting alone: the other backends fix a connection's time zone when it
    opens, and Django resets it on this thread's connections only, not the tasks store's (tests/field's
    live server runs the setting from the start).
    """
    if connections["default"].vendor != "sqlite":
        pytest.skip("USE_TZ changes at run time reach SQLite connections only")
    settings.USE_TZ = False  # type: ignore[attr-defined]
    settings.TIME_ZONE = "Europe/Berlin"  # type: ignore[attr-defined]


@pytest.mark.usefixtures("local_time_without_tz")
async def test_task_timestamps_are_utc_when_the_project_keeps_local_naive_times() -> None:
    async with McpClient("/mcp-tasks") as mcp:
        before = datetime.now(UTC)
        handle = await mcp.astart_task("quick", {"text": "x"})
        task = await mcp.await_task(handle["taskId"], "completed")
        after = datetime.now(UTC)
    for field in ("createdAt", "lastUpdatedAt"):
        moment = datetime.fromisoformat(task[field])
        assert before - timedelta(seconds=1) <= moment <= after + timedelta(seconds=1), (field, task[field], before)
    assert task["createdAt"].endswith("Z")


@pytest.mark.usefixtures("local_time_without_tz")
async def test_the_admin_shows_tasks_and_tool_calls_when_the_project_keeps_local_naive_times(async_client) -> None:
    user = await sync_to_async(get_user_model().objects.create_superuser)("boss", "boss@example.com", "pw")
    await async_client.aforce_login(user)
    async with McpClient("/mcp-tasks", client=async_client) as mcp:
        task_id = (await mcp.astart_task("quick", {"text": "x"}))["taskId"]
        await mcp.await_task(task_id, "completed")
    listing = await async_client.get("/admin/django_mcp/task/")
    assert listing.status_code == 200
    assert task_id in listing.content.decode()
    detail = await async_client.get(f"/admin/django_mcp/task/{task_id}/change/")
    assert detail.status_code == 200
    assert (await async_client.get("/admin/django_mcp/toolcall/")).status_code == 200


def test_behind_a_tls_proxy_the_endpoint_answers_and_names_itself_https(settings) -> None:
    settings.SECURE_SSL_REDIRECT = True
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    proxied = Client(headers={"X-Forwarded-Proto": "https", "Host": "testserver"})  # as a proxy forwards them
    metadata = proxied.get("/.well-known/oauth-protected-resource/mcp-oauth")
    assert metadata.status_code == 200
    assert metadata.json()["resource"] == "https://testserver/mcp-oauth"
    challenge = proxied.post("/mcp-oauth", b"{}", content_type="application/json")
    assert challenge.status_code == 401
    assert "https://testserver/.well-known/oauth-protected-resource/mcp-oauth" in challenge.headers["WWW-Authenticate"]


@pytest.mark.usefixtures("local_time_without_tz")
def test_a_client_registers_and_gets_a_token_when_the_project_keeps_local_naive_times() -> None:
    body = {"redirect_uris": ["http://127.0.0.1:5555/callback"], "token_endpoint_auth_method": "none"}
    response = Client().post("/o/register/", body, content_type="application/json")
    assert response.status_code == 201, response.content
    assert response.json()["client_id"]


@pytest.mark.usefixtures("atomic_requests")
async def test_the_admin_cancels_a_running_task_under_atomic_requests(async_client) -> None:
    """The button's request is one transaction; the cancel it asks for is written and acted on at once."""
    user = await sync_to_async(get_user_model().objects.create_superuser)("boss", "boss@example.com", "pw")
    await async_client.aforce_login(user)
    async with McpClient("/mcp-tasks", client=async_client) as mcp:
        task_id = (await mcp.astart_task("slow", {"seconds": 30}))["taskId"]
        response = await async_client.post(f"/admin/django_mcp/task/{task_id}/cancel/", follow=True)
        assert response.status_code == 200
        assert "Requested cancellation of the task." in response.content.decode()
        assert (await mcp.await_task(task_id, "cancelled"))["status"] == "cancelled"


@pytest.mark.usefixtures("atomic_requests")
async def test_the_task_monitor_and_its_stream_serve_under_atomic_requests(async_client) -> None:
    """Django refuses an async view under ATOMIC_REQUESTS unless it is marked non-atomic: the monitor's
    stream is one (the page itself is a sync admin view, in the request's transaction)."""
    user = await sync_to_async(get_user_model().objects.create_superuser)("watch", "w@example.com", "pw")
    await async_client.aforce_login(user)
    assert (await async_client.get("/admin/django_mcp/taskmonitor/")).status_code == 200
    stream = await async_client.get("/admin/django_mcp/taskmonitor/events/")
    try:
        assert stream.status_code == 200 and stream["Content-Type"] == "text/event-stream"
    finally:
        await stream.streaming_content.aclose()
        await shared_cache(get_settings().SESSION_CACHE).adelete(VIEWERS_KEY)  # none open for the next tests
        feed.reset()
