"""The README's Quick start, run as written: a new project in a temporary folder, served by a real ASGI process.

The steps are the README's own blocks (``<!-- quickstart:... -->``, see ``tests/docs/test_readme.py``):
its shell lines run one by one (``django-admin`` as ``python -m django``). The venv and ``pip
install ./django-mcp`` lines are stood in for by a fresh venv holding the wheel that ``python -m
build`` makes of this checkout (what that line installs, not editable). Its settings are appended
to the generated ``mysite/settings.py``, its files written (with the tutorial's async tool added to
``myapp/tools.py``), ``manage.py migrate`` and ``manage.py
check`` run, and ``manage.py runserver`` (daphne's) serves the project on 127.0.0.1 on a free port
(with ``--noreload``, so the test stops exactly the process it started). Then the tutorial's curl
command (``docs/tutorial.md``) must give the answer it shows, and the README's client script, run with the
official Python SDK (``mcp`` from ``tests/live/clients/install.py``'s cached venv), must print ``5``.

Also here: ``mcp_path`` (the URL helper the Quick start mounts the endpoint with) serves ``/mcp``
and ``/mcp/`` alike, over real HTTP and in-process.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest
from django.core.exceptions import ImproperlyConfigured
from django.urls import reverse

from django_mcp import McpRequest, McpServer, ToolRegistry, mcp_path
from django_mcp.checks import check_endpoint_paths
from tests.live.clients import install
from tests.live.servers import start
from tests.packaging import build, fresh_venv
from tests.readme_blocks import assert_answer, marked_block, marked_blocks, run_shell
from tests.wire import headers_for, post, request_body

README_ADDRESS = "127.0.0.1:8000"
CHECKOUT = "./django-mcp"  # where the Quick start's reader has this repository


@dataclass
class QuickStart:
    project: Path
    env: dict[str, str]
    python: str
    base: str = ""
    check_output: str = ""
    ran: list[str] = field(default_factory=list)

    @property
    def address(self) -> str:
        return self.base.removeprefix("http://")


def shell_lines(code: str) -> Iterator[str]:
    """The commands of a README shell block, without comments."""
    for raw in code.splitlines():
        line = raw.split("  #", 1)[0].strip()
        if line and not line.startswith("#"):
            yield line


def run(cmd: list[str], cwd: Path, env: dict[str, str]) -> str:
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=180, check=False)
    assert proc.returncode == 0, f"{shlex.join(cmd)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout + proc.stderr


def run_setup(code: str, cwd: Path, env: dict[str, str], ran: list[str], python: str) -> Path:
    """The Quick start's first block, with ``python`` the venv's; returns the folder its ``cd`` leaves us in."""
    for line in shell_lines(code):
        ran.append(line)
        words = shlex.split(line)
        if line.startswith("python3 -m venv .venv"):
            continue  # the fresh venv stands in for it
        if words[:2] == ["pip", "install"]:
            assert words[2:] == [CHECKOUT], f"the Quick start installs {words[2:]}"
            continue  # the fresh venv has the checkout's wheel
        if words[0] == "django-admin":
            run([python, "-m", "django", *words[1:]], cwd, env)
        elif words[0] == "cd" and len(words) == 2:
            cwd = cwd / words[1]
        elif words[:2] == ["python", "manage.py"]:
            run([python, *words[1:]], cwd, env)
        else:
            pytest.fail(f"the Quick start runs {line!r}, which this test does not know how to run")
    return cwd


@pytest.fixture(scope="module")
def quickstart(tmp_path_factory: pytest.TempPathFactory) -> Iterator[QuickStart]:
    """The Quick start's project, built step by step as the README says, served by ``manage.py runserver``."""
    # Only what a user's shell would have: no settings module or database switches of this suite.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO", "PG", "REDIS", "PYTEST", "VIRTUAL_ENV"))}
    ran: list[str] = []
    wheel, _ = build(tmp_path_factory.mktemp("dist"))
    python = str(fresh_venv(tmp_path_factory.mktemp("venv") / ".venv", str(wheel)))
    project = run_setup(
        marked_block("quickstart", "shell").code, tmp_path_factory.mktemp("quickstart"), env, ran, python
    )
    appended = marked_block("quickstart", "append")
    settings = project / str(appended.argument)
    assert settings.is_file(), f"the Quick start appends to {appended.argument}, which startproject did not create"
    settings.write_text(settings.read_text() + "\n" + appended.code + "\n")
    for block in marked_blocks("quickstart"):
        if block.kind == "write":
            target = project / str(block.argument)
            assert target.parent.is_dir(), f"{block}: no folder {target.parent.name}/ in the project"
            target.write_text(block.code + "\n")
    for block in marked_blocks("quickstart"):
        if block.kind == "add":  # the tutorial's next steps, added to a file written above
            target = project / str(block.argument)
            assert target.is_file(), f"{block}: adds to {block.argument}, which no earlier step writes"
            target.write_text(target.read_text() + "\n\n" + block.code + "\n")
    state = QuickStart(project, env, python, ran=ran)
    server = None
    try:
        for line in shell_lines(marked_block("quickstart", "run").code):
            ran.append(line)
            words = shlex.split(line)
            assert words[:2] == ["python", "manage.py"], f"the Quick start runs {line!r}"
            if words[2] == "runserver":
                assert server is None
                server = start(
                    ["manage.py", "runserver", *words[3:], "127.0.0.1:{port}", "--noreload"],
                    env=env,
                    ready_path="/mcp",
                    python=python,
                    cwd=project,
                    inherit_env=False,
                )
                state.base = server.base
            elif words[2] == "check":
                state.check_output = run([python, *words[1:]], project, env)
            else:
                run([python, *words[1:]], project, env)
        assert server is not None, "the Quick start never starts the server"
        yield state
    finally:
        if server is not None:
            server.stop()


live = pytest.mark.live


@live
def test_the_quick_start_runs_every_step_the_readme_shows(quickstart):
    assert quickstart.ran[2:5] == [
        "django-admin startproject mysite",
        "cd mysite",
        "python manage.py startapp myapp",
    ]
    assert {"python manage.py migrate", "python manage.py check", "python manage.py runserver"} <= set(quickstart.ran)
    assert {b.argument for b in marked_blocks("quickstart") if b.kind == "write"} == {
        "myapp/tools.py",
        "myapp/apps.py",
        "mysite/urls.py",
    }
    assert {(b.page, b.argument) for b in marked_blocks("quickstart") if b.kind == "add"} == {
        ("docs/tutorial.md", "myapp/tools.py")
    }


@live
def test_manage_py_check_prints_no_warning(quickstart):
    """W001 (SQLite transaction mode), W004 (channel layer) and the rest are satisfied by the settings shown."""
    assert "System check identified no issues (0 silenced)." in quickstart.check_output, quickstart.check_output
    assert "WARNING" not in quickstart.check_output
    strict = run(
        [quickstart.python, "manage.py", "check", "--fail-level", "WARNING"], quickstart.project, quickstart.env
    )
    assert "no issues" in strict


@live
def test_the_tutorials_curl_gets_the_answer_it_shows(quickstart, tmp_path):
    command = marked_block("quickstart", "curl").code
    assert README_ADDRESS in command
    output, _ = run_shell(command.replace(README_ADDRESS, quickstart.address), quickstart.env, tmp_path)
    assert_answer(output, marked_block("quickstart", "answer"))


@live
@pytest.mark.timeout(900)
def test_the_official_python_sdk_calls_the_tool(quickstart, tmp_path):
    """The README's client script, with the official SDK (``mcp`` 2.x, installed once into a cache)."""
    client = marked_block("quickstart", "client")
    script = tmp_path / str(client.argument)
    script.write_text(client.code.replace(README_ADDRESS, quickstart.address))
    try:
        python = install.ensure_python_sdk(sys.stderr)
    except install.InstallError as exc:
        # No registry and no cache: the same call on the 2026-07-28 wire with plain httpx.
        sys.stderr.write(f"the mcp SDK could not be installed ({exc}); calling with httpx instead\n")
        body = request_body("tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}})
        answer = httpx.post(quickstart.base + "/mcp", content=json.dumps(body), headers=headers_for(body), timeout=10)
        assert answer.json()["result"]["content"][0]["text"] == "5"
        return
    proc = subprocess.run(
        [str(python), str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False
    )
    assert (proc.returncode, proc.stdout.strip()) == (0, "5"), proc.stderr[-3000:]


def _call(base: str, path: str, name: str, arguments: dict) -> httpx.Response:
    body = request_body("tools/call", {"name": name, "arguments": arguments})
    return httpx.post(base + path, content=json.dumps(body), headers=headers_for(body), timeout=10)


@live
@pytest.mark.parametrize("path", ["/mcp", "/mcp/"])
def test_both_urls_answer_over_real_http(quickstart, path):
    response = _call(quickstart.base, path, "add", {"a": 40, "b": 2})
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/json")
    assert response.json()["result"]["content"][0]["text"] == "42"
    bad = httpx.post(quickstart.base + path, content=b"{nope", headers=headers_for({}), timeout=10)
    assert (bad.status_code, bad.json()["error"]["code"]) == (400, -32700)  # JSON-RPC, never an HTML page
    assert httpx.post(quickstart.base + path + "x", content=b"{}", timeout=10).status_code == 404


@live
def test_the_tutorials_async_tool_and_its_tool_error(quickstart):
    assert (
        _call(quickstart.base, "/mcp", "countdown", {"start": 1}).json()["result"]["content"][0]["text"] == "Liftoff!"
    )
    refused = _call(quickstart.base, "/mcp", "countdown", {"start": 11}).json()["result"]
    assert refused["isError"] is True
    assert refused["content"][0]["text"] == "Start at 10 or less."


# ---------------------------------------------------------------- mcp_path in-process

own_tools = ToolRegistry()


@own_tools.register
def where(request: McpRequest) -> str:
    return request.http_request.path


own_server = McpServer(tools=own_tools, urls_namespace="quickstart_own")

urlpatterns = [mcp_path("mcp"), mcp_path("billing/mcp/", own_server)]


@pytest.mark.urls(__name__)
@pytest.mark.parametrize("path", ["/mcp", "/mcp/"])
async def test_mcp_path_serves_the_default_server_with_and_without_the_slash(async_client, path):
    body = request_body("tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}})
    response = await post(async_client, body, path=path)
    assert response.status_code == 200
    assert json.loads(response.content)["result"]["content"][0]["text"] == "3"


@pytest.mark.urls(__name__)
@pytest.mark.parametrize("path", ["/billing/mcp", "/billing/mcp/"])
async def test_mcp_path_serves_a_server_of_your_own(async_client, path):
    body = request_body("tools/call", {"name": "where", "arguments": {}})
    response = await post(async_client, body, path=path)
    assert json.loads(response.content)["result"]["content"][0]["text"] == path


@pytest.mark.urls(__name__)
@pytest.mark.parametrize("path", ["/mcpx", "/mcp/x", "/mcp//", "/billing/mcpx", "/billing/"])
async def test_mcp_path_matches_nothing_else(async_client, path):
    response = await post(async_client, request_body("tools/list"), path=path)
    assert response.status_code == 404


@pytest.mark.urls(__name__)
def test_mcp_path_keeps_the_namespaces():
    assert reverse("django_mcp:mcp_post") == "/mcp"
    assert reverse("quickstart_own:mcp_post") == "/billing/mcp"


@pytest.mark.parametrize("path", ["/mcp", "/mcp/", "/mcp-tasks", "/mcp-tasks/", "/mcp-fleet", "/mcp-fleet/"])
async def test_path_without_a_slash_serves_both(async_client, path):
    # tests/urls.py: mcp_path("mcp"), path("mcp-tasks", server.urls), path("mcp-fleet", include(...)).
    response = await post(async_client, request_body("tools/list"), path=path)
    assert response.status_code == 200 and "tools" in json.loads(response.content)["result"]


@pytest.mark.parametrize("path", ["/mcp-tasksx", "/mcp-tasks/x", "/mcp-tasks//x"])
async def test_path_without_a_slash_matches_nothing_else(async_client, path):
    response = await post(async_client, request_body("tools/list"), path=path)
    assert response.status_code == 404


def test_w013_is_silent_for_every_form_that_serves_both():
    assert [m for m in check_endpoint_paths() if m.id == "django_mcp.W013"] == []


@pytest.mark.urls("tests.urls_root")
async def test_the_sites_root_is_served_and_w013_is_silent(async_client):
    assert check_endpoint_paths() == []
    response = await post(async_client, request_body("tools/list"), path="/")
    assert response.status_code == 200


@pytest.mark.urls("tests.urls_slashed")
def test_w013_a_route_with_a_trailing_slash():
    [warning] = check_endpoint_paths()
    assert warning.id == "django_mcp.W013"
    assert "served at '/mcp/' but not at '/mcp'" in warning.msg
    assert 'mcp_path("mcp")' in warning.hint


@pytest.mark.urls("tests.urls_i18n")
def test_w018_an_endpoint_inside_i18n_patterns():
    [warning] = check_endpoint_paths()
    assert warning.id == "django_mcp.W018"
    assert "inside i18n_patterns() ('/en-us/mcp')" in warning.msg
    assert "outside i18n_patterns()" in warning.hint


@pytest.mark.urls("tests.urls_slashed")
async def test_a_route_with_a_trailing_slash_serves_its_own_path(async_client):
    response = await post(async_client, request_body("tools/list"), path="/mcp/")
    assert response.status_code == 200


@pytest.mark.parametrize("route", ["/mcp", "<int:tenant>/mcp", "a//mcp"])
def test_mcp_path_refuses_routes_it_cannot_serve_literally(route):
    with pytest.raises(ImproperlyConfigured, match="literal route"):
        mcp_path(route)
