"""The project a team already has (tests/field/settings.py), served by daphne and driven as its clients would.

Its settings and middleware: ``ATOMIC_REQUESTS``, ``LoginRequiredMiddleware``, security middleware behind a
proxy, GZip, conditional GET, German and Berlin time with ``USE_TZ = False``, persistent connections with
health checks, a custom user signed in by email, a primary/replica router, django-cors-headers, whitenoise.
The official conformance suite judges it at both eras, as it judges the bare fixture project.
"""

from __future__ import annotations

import io
import json
import os
import re
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest

from tests.conformance.runner import ConformanceError, run
from tests.field.servers import field_server
from tests.wire import assert_wire, headers_for, initialize_body, request_body

pytestmark = [
    pytest.mark.live,
    # The field project runs on its own SQLite file whatever the suite's database: once per CI run.
    pytest.mark.skipif(os.environ.get("DJANGO_MCP_DATABASE", "sqlite") != "sqlite", reason="its own SQLite"),
    pytest.mark.timeout(900),
]

ADMIN = ("boss@example.com", "field-pw-1")
TASKS = {"extensions": {"io.modelcontextprotocol/tasks": {}}}


@pytest.fixture(scope="module")
def spans(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the field project's OpenTelemetry SDK writes its spans (JSON, one object each)."""
    return tmp_path_factory.mktemp("field-spans") / "spans.json"


@pytest.fixture(scope="module")
def field(tmp_path_factory: pytest.TempPathFactory, spans: Path) -> Iterator[str]:
    """The field project under daphne on a migrated SQLite file, with a superuser signed in by email."""
    database = tmp_path_factory.mktemp("field") / "db.sqlite3"
    with field_server(database, ADMIN, DJANGO_MCP_FIELD_SPANS=str(spans)) as base:
        yield base


def rpc(url: str, method: str, params: dict | None = None, **meta: object) -> tuple[httpx.Response, dict]:
    body = request_body(method, params, **meta)
    response = httpx.post(url, content=json.dumps(body), headers=headers_for(body), timeout=10)
    return response, response.json()


def test_both_eras_serve_tools_through_the_teams_middleware(field: str) -> None:
    response, body = rpc(field + "/mcp", "server/discover")
    assert response.status_code == 200, response.text
    assert_wire(body, "DiscoverResultResponse")
    _, body = rpc(field + "/mcp", "tools/call", {"name": "echo", "arguments": {"text": "Grüße"}})
    assert body["result"]["content"][0]["text"] == "Grüße"

    init = initialize_body()
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    response = httpx.post(field + "/mcp", content=json.dumps(init), headers=headers, timeout=10)
    assert response.status_code == 200, response.text
    session = {**headers, "Mcp-Session-Id": response.headers["Mcp-Session-Id"], "MCP-Protocol-Version": "2025-11-25"}
    notified = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert httpx.post(field + "/mcp", json=notified, headers=session, timeout=10).status_code == 202
    listed = httpx.post(field + "/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, headers=session)
    assert any(tool["name"] == "echo" for tool in listed.json()["result"]["tools"])
    assert httpx.delete(field + "/mcp", headers=session, timeout=10).status_code in (200, 204)


def test_a_task_runs_and_its_times_are_utc_though_the_project_keeps_berlin_time(field: str) -> None:
    before = datetime.now(UTC)
    call = {"name": "slow_compute", "arguments": {"seconds": 0.3, "label": "field"}}
    _, body = rpc(field + "/mcp", "tools/call", call, capabilities=TASKS)
    handle = body["result"]
    assert handle["resultType"] == "task", body
    deadline = time.monotonic() + 10
    while True:
        _, got = rpc(field + "/mcp", "tasks/get", {"taskId": handle["taskId"]}, capabilities=TASKS)
        if got["result"]["status"] == "completed" or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    task = got["result"]
    assert task["status"] == "completed", task
    created = datetime.fromisoformat(task["createdAt"])
    assert before - timedelta(seconds=2) <= created <= datetime.now(UTC) + timedelta(seconds=2), task["createdAt"]


def test_progress_streams_as_it_happens_through_gzip(field: str) -> None:
    body = request_body("tools/call", {"name": "test_tool_with_progress", "arguments": {}}, progressToken="field")
    headers = {**headers_for(body), "Accept-Encoding": "gzip"}
    arrivals = []
    with httpx.stream("POST", field + "/mcp", content=json.dumps(body), headers=headers, timeout=10) as response:
        assert response.headers["content-type"] == "text/event-stream"
        for line in response.iter_lines():
            if line.startswith("data: "):
                arrivals.append((time.monotonic(), json.loads(line[6:])))
    assert [m.get("method") for _, m in arrivals] == ["notifications/progress"] * 3 + [None]
    assert arrivals[-1][0] - arrivals[0][0] > 0.05  # the steps came as they happened, not in one flush


def test_the_teams_own_pages_stay_behind_login_required_middleware(field: str) -> None:
    response = httpx.get(field + "/dashboard/", timeout=10)
    assert (response.status_code, response.headers["Location"]) == (302, "/accounts/login/?next=/dashboard/")


@pytest.mark.parametrize(
    "path",
    [
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-authorization-server",
        "/health/ready",
        "/o/login/",
    ],
)
def test_metadata_health_and_sign_in_answer_anonymous_clients(field: str, path: str) -> None:
    response = httpx.get(field + path, timeout=10)
    assert response.status_code == 200, (response.status_code, response.headers.get("Location"))


def test_the_consent_page_sends_a_stranger_to_the_sign_in_page(field: str) -> None:
    redirect = "http://127.0.0.1:5555/callback"
    body = {"redirect_uris": [redirect], "token_endpoint_auth_method": "none"}
    client_id = httpx.post(field + "/o/register/", json=body, timeout=10).json()["client_id"]
    query = {"client_id": client_id, "response_type": "code", "redirect_uri": redirect, "code_challenge": "c" * 43}
    response = httpx.get(field + "/o/authorize/", params={**query, "code_challenge_method": "S256"}, timeout=10)
    assert response.status_code == 302
    assert response.headers["Location"].startswith("/o/login/?next=")


def admin_session(base: str) -> httpx.Client:
    """An httpx client signed in to the admin with the custom user's email."""
    client = httpx.Client(base_url=base, timeout=10)
    page = client.get("/admin/login/")
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)
    assert token, page.text[:500]
    form = {"csrfmiddlewaretoken": token.group(1), "username": ADMIN[0], "password": ADMIN[1], "next": "/admin/"}
    signed_in = client.post("/admin/login/", data=form, headers={"Referer": base + "/admin/login/"})
    assert signed_in.status_code == 302, signed_in.text[:500]
    return client


@pytest.mark.parametrize("page", ["task", "personaltoken", "toolcall"])
def test_the_admin_lists_and_searches_with_a_custom_user_model(field: str, page: str) -> None:
    admin = admin_session(field)
    try:
        response = admin.get(f"/admin/django_mcp/{page}/", params={"q": "boss"})
    finally:
        admin.close()
    assert response.status_code == 200, response.text[-2000:]


def test_a_call_is_audited_and_traced_with_rate_limits_on_as_the_team_deploys(field: str, spans: Path) -> None:
    """Rate limits, the audit log and tracing on (tests/field/settings.py), beside the team's middleware."""
    response, body = rpc(field + "/mcp", "tools/call", {"name": "echo", "arguments": {"text": "on the record"}})
    assert response.status_code == 200 and body["result"]["content"][0]["text"] == "on the record", body
    admin = admin_session(field)
    deadline = time.monotonic() + 10
    try:  # the audit row, in the admin (rows are written in batches, off the request's path)
        while not re.search(r"/admin/django_mcp/toolcall/\d+/change/", admin.get("/admin/django_mcp/toolcall/").text):
            assert time.monotonic() < deadline, "no audit row of the call"
            time.sleep(0.1)
    finally:
        admin.close()
    while '"name": "tools/call echo"' not in (spans.read_text() if spans.exists() else ""):
        assert time.monotonic() < deadline, "no span of the call was exported"
        time.sleep(0.1)


@pytest.fixture(scope="module", params=["2026-07-28", "2025-11-25"])
def conformance(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> object:
    out = tmp_path_factory.mktemp(f"field-conformance-{request.param}")
    try:
        return run(out_dir=out, progress=io.StringIO(), revision=request.param, project="tests.field")
    except ConformanceError as exc:
        return f"the conformance suite could not run: {exc}"


@pytest.mark.conformance
def test_the_official_conformance_suite_passes_inside_the_teams_project(conformance: object) -> None:
    assert not isinstance(conformance, str), conformance
    failures = [f"{f.scenario} :: {f.check_id}: {f.message}" for f in conformance.failures]  # type: ignore[attr-defined]
    assert not failures, "\n".join(failures)
    assert len(conformance.scenarios) >= 30, conformance.summary_line  # type: ignore[attr-defined]


def test_the_field_project_is_what_its_docstring_says() -> None:
    settings = (Path(__file__).parent / "settings.py").read_text()
    for setting in ("ATOMIC_REQUESTS", "LoginRequiredMiddleware", "GZipMiddleware", "ConditionalGetMiddleware",
                    "LocaleMiddleware", "SECURE_PROXY_SSL_HEADER", "CONN_HEALTH_CHECKS", "AUTH_USER_MODEL",
                    "DATABASE_ROUTERS", "CorsMiddleware", "WhiteNoiseMiddleware"):  # fmt: skip
        assert setting in settings, setting
