"""The login and consent pages in headless Chromium under daphne, uvicorn and gunicorn, with no static files
served: they look finished (their own styles applied, light and dark), say who asks and where the browser
goes, and Allow sends the browser to the client's loopback callback.

Set DJANGO_MCP_SCREENSHOTS to a directory to keep the screenshots (docs/_static/sign-in/ has daphne's).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from tests.chromium import CHROMIUM, Browser, opened_browser
from tests.live.servers import server_process, sqlite_project

pytestmark = [
    pytest.mark.live,
    # Servers of their own on a SQLite file of their own, whatever the leg: once per CI run is enough.
    pytest.mark.skipif(os.environ.get("DJANGO_MCP_DATABASE", "sqlite") != "sqlite", reason="its own SQLite"),
    pytest.mark.skipif(CHROMIUM is None, reason="needs chromium (Debian: apt-get install chromium; .ci/run does)"),
    pytest.mark.timeout(180),
]

SERVERS = {
    "daphne": ["-m", "daphne", "-b", "127.0.0.1", "-p", "{port}", "tests.asgi:application"],
    "uvicorn": ["-m", "uvicorn", "--host", "127.0.0.1", "--port", "{port}", "tests.asgi:application"],
    "gunicorn": ["-m", "gunicorn", "-w", "1", "-b", "127.0.0.1:{port}", "example_project.wsgi"],  # WSGI
}

# What a person sees, measured: the page's own styles applied (no stylesheet fetched), the card apart from
# the page, the main button in the accent colour.
MEASURE = """(() => {
  const style = (sel) => getComputedStyle(document.querySelector(sel));
  return {
    title: document.title,
    text: document.body.innerText,
    sheets: [...document.styleSheets].map(s => s.href),
    pageBackground: style('body').backgroundColor,
    cardBackground: style('main').backgroundColor,
    cardRadius: style('main').borderTopLeftRadius,
    cardWidth: document.querySelector('main').getBoundingClientRect().width,
    font: style('body').fontFamily,
    primary: style('.primary').backgroundColor,
    primaryText: style('.primary').color,
  };
})()"""


def luminance(rgb: str) -> float:
    red, green, blue = (int(part) for part in rgb[rgb.index("(") + 1 : rgb.index(")")].split(",")[:3])
    return (0.2126 * red + 0.7152 * green + 0.0722 * blue) / 255


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    return sqlite_project(tmp_path_factory.mktemp("sign-in-pages") / "db.sqlite3", "ada", "pw-for-ada")


@pytest.fixture(params=sorted(SERVERS))
def served(request: pytest.FixtureRequest, project: dict[str, str]) -> Iterator[tuple[str, str]]:
    with server_process(SERVERS[request.param], env=project, ready_path="/o/login/") as base:
        yield request.param, base


class _Callback(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.end_headers()
        self.wfile.write(b"back at the client")

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def callback() -> Iterator[str]:
    """A native client's loopback callback, as Claude Code or VS Code listen on one."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Callback)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/callback"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Browser]:
    with opened_browser(tmp_path / "profile", width=1280, height=800) as chromium:
        yield chromium


def keep(browser: Browser, tmp_path: Path, name: str) -> None:
    browser.screenshot(Path(os.environ.get("DJANGO_MCP_SCREENSHOTS") or tmp_path) / name)


def assert_finished(page: dict[str, Any]) -> None:
    assert page["sheets"] == [None], page["sheets"]  # one stylesheet, inline: nothing to serve
    assert page["pageBackground"] != page["cardBackground"]
    assert page["cardRadius"] == "12px" and 400 < page["cardWidth"] <= 481
    assert "Times" not in page["font"] and "system-ui" in page["font"]
    assert page["primary"] not in ("rgba(0, 0, 0, 0)", page["cardBackground"])


def test_the_pages_look_finished_and_say_who_asks_and_where_the_browser_goes(
    served: tuple[str, str], browser: Browser, callback: str, tmp_path: Path
) -> None:
    server, base = served
    site = urlsplit(base).netloc  # no django.contrib.sites here: the request's host names the site
    registered = httpx.post(
        f"{base}/o/register/",
        json={
            "client_name": "Claude",
            "redirect_uris": [callback],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "none",
        },
    )
    assert registered.status_code == 201, registered.text
    query = {
        "response_type": "code",
        "client_id": registered.json()["client_id"],
        "redirect_uri": callback,
        "code_challenge": "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
        "code_challenge_method": "S256",
        "scope": "mcp notes:write",
        "state": "s1",
    }
    browser.load("navigate", url=str(httpx.URL(f"{base}/o/authorize/", params=query)))

    login = browser.evaluate(MEASURE)
    assert login["title"] == f"Sign in · {site}"
    assert f"Sign in to {site}" in login["text"] and "Claude wants to use this site's tools as you" in login["text"]
    assert_finished(login)
    keep(browser, tmp_path, f"login-{server}.png")

    browser.load(
        "document.querySelector('[name=username]').value = 'ada';"
        "document.querySelector('[name=password]').value = 'pw-for-ada';"
        "document.querySelector('form').submit()"
    )
    consent = browser.evaluate(MEASURE)
    assert consent["title"] == f"Allow Claude to use {site}? · {site}", consent["text"]
    for said in (
        f"Allow Claude to use {site} as you?",
        "Not verified: anyone can register a client under any name.",
        "Signed in as\nada · not you?",
        "Sends you to\nthis computer",
        "Use the MCP tools (mcp)",
        "Write notes (notes:write)",
    ):
        assert said in consent["text"], (said, consent["text"])
    assert_finished(consent)
    assert luminance(consent["pageBackground"]) > 0.8  # light by default
    keep(browser, tmp_path, f"consent-{server}.png")

    browser.call("Emulation.setEmulatedMedia", {"features": [{"name": "prefers-color-scheme", "value": "dark"}]})
    dark = browser.evaluate(MEASURE)
    assert luminance(dark["pageBackground"]) < 0.2 and luminance(dark["primaryText"]) < luminance(dark["primary"])
    keep(browser, tmp_path, f"consent-dark-{server}.png")
    browser.call("Emulation.setEmulatedMedia", {"features": []})

    browser.load("document.querySelector('[name=allow]').click()")
    landed = urlsplit(browser.evaluate("location.href"))
    assert f"{landed.scheme}://{landed.netloc}{landed.path}" == callback
    assert parse_qs(landed.query)["state"] == ["s1"] and parse_qs(landed.query)["code"]
