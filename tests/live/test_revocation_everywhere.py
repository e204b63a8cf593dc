"""A token revoked by the command, the admin or the revocation endpoint is refused by every worker within 1 s.

Two daphne processes serve one SQLite file and a private Redis (the shared cache); each has just accepted the
token (so it remembers it for ``OAUTH_TOKEN_CACHE_SECONDS``, 10 s by default), then it is revoked in a third
process or through one of the two.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator

import httpx
import pytest

from tests.live.servers import ROOT, Redis, server_process, sqlite_project
from tests.wire import headers_for, request_body

pytestmark = [
    pytest.mark.live,
    # Servers of their own on a SQLite file of their own, whatever the leg: once per CI run is enough.
    pytest.mark.skipif(os.environ.get("DJANGO_MCP_DATABASE", "sqlite") != "sqlite", reason="its own SQLite"),
    pytest.mark.skipif(shutil.which("redis-server") is None, reason="needs redis-server"),
    pytest.mark.timeout(180),
]

WITHIN = 1.0  # seconds, from the revocation's end to every worker refusing
DAPHNE = ["-m", "daphne", "-b", "127.0.0.1", "-p", "{port}", "tests.asgi:application"]
LIST = request_body("tools/list")


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    redis = Redis()
    redis.start()
    database = tmp_path_factory.mktemp("revocation") / "db.sqlite3"
    try:
        yield sqlite_project(database, "ada", "pw-for-ada", redis_url=f"redis://127.0.0.1:{redis.port}/0")
    finally:
        redis.stop()


@pytest.fixture(scope="module")
def workers(project: dict[str, str]) -> Iterator[tuple[str, str]]:
    with server_process(DAPHNE, env=project) as first, server_process(DAPHNE, env=project) as second:
        yield first, second


def manage(env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "django", *args],
        cwd=ROOT,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return done.stdout.strip().splitlines()[-1]  # the shell may say what it imported first


def statuses(workers: tuple[str, str], token: str) -> list[int]:
    headers = {**headers_for(LIST), "Authorization": f"Bearer {token}"}
    return [httpx.post(f"{base}/mcp-oauth", json=LIST, headers=headers).status_code for base in workers]


def after(revoked_at: float) -> None:
    time.sleep(max(0.0, revoked_at + WITHIN - time.monotonic()))


def test_revoked_by_the_command(project, workers):
    token = manage(project, "mcp_token", "create", "--user", "ada", "--name", "by command")
    assert statuses(workers, token) == [200, 200]  # each worker remembers it now
    manage(project, "mcp_token", "revoke", token[:16])
    after(time.monotonic())
    assert statuses(workers, token) == [401, 401]


def test_revoked_in_the_admin_of_one_worker(project, workers):
    token = manage(project, "mcp_token", "create", "--user", "ada", "--name", "by admin")
    assert statuses(workers, token) == [200, 200]
    with httpx.Client(base_url=workers[0], follow_redirects=True) as browser:
        login = browser.get("/admin/login/")
        csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', login.text).group(1)
        browser.post("/admin/login/", data={"username": "ada", "password": "pw-for-ada", "csrfmiddlewaretoken": csrf})
        listing = browser.get("/admin/django_mcp/personaltoken/", params={"q": "by admin"})
        [pk] = re.findall(r'name="_selected_action" value="(\d+)"', listing.text)
        csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', listing.text).group(1)
        done = browser.post(
            "/admin/django_mcp/personaltoken/",
            data={"action": "revoke", "_selected_action": [pk], "csrfmiddlewaretoken": csrf},
            headers={"Referer": f"{workers[0]}/admin/django_mcp/personaltoken/"},
        )
    assert "Revoked 1 token(s)." in done.text
    after(time.monotonic())
    assert statuses(workers, token) == [401, 401]


def test_revoked_at_the_revocation_endpoint_of_one_worker(project, workers):
    resources = " ".join(repr(f"{base}/mcp-oauth") for base in workers)
    token = manage(
        project,
        "shell",
        "-c",
        "from datetime import timedelta; from django.utils import timezone;"
        "from django.contrib.auth.models import User; from oauth2_provider.models import AccessToken, Application;"
        "app = Application.objects.create(client_id='cli', client_type='public',"
        " authorization_grant_type='authorization-code', redirect_uris='http://127.0.0.1:1/cb');"
        "AccessToken.objects.create(user=User.objects.get(username='ada'), token='dot-revoke-me-0123456789',"
        f" scope='mcp', resource=[{resources.replace(' ', ', ')}], application=app,"
        " expires=timezone.now() + timedelta(hours=1)); print('dot-revoke-me-0123456789')",
    )
    assert statuses(workers, token) == [200, 200]
    revoked = httpx.post(f"{workers[1]}/o/revoke_token/", data={"token": token, "client_id": "cli"})
    assert revoked.status_code == 200, revoked.text
    after(time.monotonic())
    assert statuses(workers, token) == [401, 401]
