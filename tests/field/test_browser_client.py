"""A browser-based MCP client on another origin, in headless Chromium: CORS as the Fetch standard has it.

A page served from one loopback origin talks to the field project (tests/field/settings.py, with
django-cors-headers set up as docs/clients.md says) on another, through ``fetch`` alone: both eras'
calls, reading the headers a client must read, and the OAuth code flow with PKCE (registration and
the token exchange cross-origin; sign-in and consent as the person's own navigation).
"""

from __future__ import annotations

import functools
import json
import os
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from tests.chromium import CHROMIUM, Browser
from tests.field.servers import field_server
from tests.live.servers import free_port

pytestmark = [
    pytest.mark.live,
    # The field project runs on its own SQLite file whatever the suite's database: once per CI run.
    pytest.mark.skipif(os.environ.get("DJANGO_MCP_DATABASE", "sqlite") != "sqlite", reason="its own SQLite"),
    pytest.mark.skipif(CHROMIUM is None, reason="needs chromium (Debian: apt-get install chromium; .ci/run does)"),
    pytest.mark.timeout(180),
]

USER = ("reader@example.com", "field-pw-2")

# The client, as a page's script: JSON-RPC over fetch with the headers a conforming client sends.
CLIENT_JS = """
window.mcp = async (url, method, params = {}, extra = {}) => {
  const body = {jsonrpc: "2.0", id: 1, method, params};
  const headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream", ...extra};
  if (!extra["Mcp-Session-Id"] && method !== "initialize") {
    params._meta = {
      "io.modelcontextprotocol/protocolVersion": "2026-07-28",
      "io.modelcontextprotocol/clientInfo": {name: "browser", version: "1"},
      "io.modelcontextprotocol/clientCapabilities": {},
    };
    headers["MCP-Protocol-Version"] = "2026-07-28";
    headers["Mcp-Method"] = method;
    if (method === "tools/call") headers["Mcp-Name"] = params.name;
  }
  const response = await fetch(url, {method: "POST", headers, body: JSON.stringify(body)});
  const read = (name) => response.headers.get(name);
  return {status: response.status, body: await response.json(), session: read("Mcp-Session-Id"),
          version: read("MCP-Protocol-Version"), challenge: read("WWW-Authenticate")};
};
window.pkce = async () => {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  const b64url = (buf) => btoa(String.fromCharCode(...new Uint8Array(buf)))
    .replace(/\\+/g, "-").replace(/\\//g, "_").replace(/=+$/, "");
  const verifier = b64url(bytes);
  const challenge = b64url(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier)));
  return {verifier, challenge};
};
"""


@pytest.fixture(scope="module")
def page_origin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A static page on its own loopback port: the browser client's origin."""
    folder = tmp_path_factory.mktemp("page")
    html = f"<!doctype html><title>MCP browser client</title><script>{CLIENT_JS}</script>"
    (folder / "index.html").write_text(html)
    (folder / "callback.html").write_text(html)
    handler = functools.partial(SimpleHTTPRequestHandler, directory=str(folder))
    handler.log_message = lambda *args: None  # type: ignore[method-assign]
    server = ThreadingHTTPServer(("127.0.0.1", free_port()), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def field(page_origin: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    database = tmp_path_factory.mktemp("field-browser") / "db.sqlite3"
    with field_server(database, USER, DJANGO_MCP_FIELD_ORIGINS=page_origin) as base:
        yield base


@pytest.fixture
def browser(tmp_path: Path, page_origin: str) -> Iterator[Browser]:
    chromium = Browser(tmp_path / "profile")
    try:
        chromium.open_page()
        chromium.load("navigate", url=page_origin + "/index.html")
        yield chromium
    finally:
        chromium.close()


def call(browser: Browser, url: str, method: str, params: dict | None = None, headers: dict | None = None) -> dict:
    return browser.evaluate(f"mcp({json.dumps(url)}, {json.dumps(method)}, {json.dumps(params or {})}, "
                            f"{json.dumps(headers or {})})")  # fmt: skip


def test_a_page_on_another_origin_discovers_lists_and_calls_tools(browser: Browser, field: str) -> None:
    discovered = call(browser, field + "/mcp", "server/discover")
    assert discovered["status"] == 200, discovered
    assert discovered["body"]["result"]["supportedVersions"] == ["2026-07-28"]
    listed = call(browser, field + "/mcp", "tools/list")
    assert any(tool["name"] == "echo" for tool in listed["body"]["result"]["tools"])
    echoed = call(browser, field + "/mcp", "tools/call", {"name": "echo", "arguments": {"text": "from a page"}})
    assert echoed["body"]["result"]["content"][0]["text"] == "from a page"


def test_a_page_on_another_origin_opens_a_handshake_era_session_and_reads_its_headers(
    browser: Browser, field: str
) -> None:
    init = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "browser", "version": "1"}}
    opened = call(browser, field + "/mcp", "initialize", init)
    assert opened["status"] == 200, opened
    assert opened["session"], "Mcp-Session-Id is not exposed to the page"
    session = {"Mcp-Session-Id": opened["session"], "MCP-Protocol-Version": "2025-11-25"}
    listed = call(browser, field + "/mcp", "tools/list", {}, session)
    assert any(tool["name"] == "echo" for tool in listed["body"]["result"]["tools"])


def test_origin_validation_stays_as_strict_as_cors_is_open(field: str, page_origin: str) -> None:
    # CORS lets any loopback page read answers (tests/field/settings.py); only the listed origin may call.
    stranger = "http://127.0.0.1:1"
    preflight = httpx.options(
        field + "/mcp", headers={"Origin": stranger, "Access-Control-Request-Method": "POST"}, timeout=10
    )
    assert preflight.headers["Access-Control-Allow-Origin"] == stranger
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    refused = httpx.post(field + "/mcp", json=body, headers={"Origin": stranger}, timeout=10)
    assert refused.status_code == 403


def test_a_page_on_another_origin_signs_in_with_the_code_flow_and_pkce(
    browser: Browser, field: str, page_origin: str
) -> None:
    resource = field + "/mcp-signed-in"
    # 1. An anonymous call is refused with a challenge the page can read (WWW-Authenticate is exposed).
    refused = call(browser, resource, "tools/list")
    assert refused["status"] == 401
    assert refused["challenge"].startswith("Bearer ") and "resource_metadata=" in refused["challenge"]
    # 2. Discovery and registration, cross-origin.
    redirect_uri = page_origin + "/callback.html"
    registered = browser.evaluate(f"""(async () => {{
      const meta = await (await fetch({json.dumps(field + "/.well-known/oauth-authorization-server")})).json();
      const response = await fetch(meta.registration_endpoint, {{method: "POST",
        headers: {{"Content-Type": "application/json"}},
        body: JSON.stringify({{client_name: "Browser client", redirect_uris: [{json.dumps(redirect_uri)}],
          token_endpoint_auth_method: "none", grant_types: ["authorization_code", "refresh_token"],
          response_types: ["code"]}})}});
      const client = await response.json();
      const {{verifier, challenge}} = await pkce();
      sessionStorage.setItem("verifier", verifier);
      return {{status: response.status, client_id: client.client_id, meta, challenge}};
    }})()""")
    assert registered["status"] == 201, registered
    meta = registered["meta"]
    # 3. The person signs in and allows, by navigation (the login and consent pages are the server's own).
    query = {
        "response_type": "code",
        "client_id": registered["client_id"],
        "redirect_uri": redirect_uri,
        "code_challenge": registered["challenge"],
        "code_challenge_method": "S256",
        "scope": "mcp",
        "state": "s1",
        "resource": resource,
    }
    authorize = str(httpx.URL(meta["authorization_endpoint"], params=query))
    browser.load("navigate", url=authorize)
    assert "/o/login/" in browser.evaluate("location.href")
    browser.load(
        f"document.querySelector('[name=username]').value = {json.dumps(USER[0])};"
        f"document.querySelector('[name=password]').value = {json.dumps(USER[1])};"
        "document.querySelector('form').submit()"
    )
    assert "/o/authorize/" in browser.evaluate("location.href"), browser.evaluate("document.body.innerText")
    browser.load("document.querySelector('[name=allow]').click()")
    landed = urlsplit(browser.evaluate("location.href"))
    assert f"{landed.scheme}://{landed.netloc}{landed.path}" == redirect_uri
    code = parse_qs(landed.query)
    assert code["state"] == ["s1"], code
    # 4. The token exchange and the signed-in call, cross-origin from the callback page.
    signed_in = browser.evaluate(f"""(async () => {{
      const form = new URLSearchParams({{grant_type: "authorization_code", code: {json.dumps(code["code"][0])},
        redirect_uri: {json.dumps(redirect_uri)}, client_id: {json.dumps(registered["client_id"])},
        code_verifier: sessionStorage.getItem("verifier"), resource: {json.dumps(resource)}}});
      const response = await fetch({json.dumps(meta["token_endpoint"])}, {{method: "POST", body: form}});
      const token = await response.json();
      const called = await mcp({json.dumps(resource)}, "tools/call",
        {{name: "echo", arguments: {{text: "signed in"}}}}, {{"Authorization": "Bearer " + token.access_token}});
      return {{status: response.status, token_type: token.token_type, called}};
    }})()""")
    assert (signed_in["status"], signed_in["token_type"]) == (200, "Bearer"), signed_in
    assert signed_in["called"]["body"]["result"]["content"][0]["text"] == "signed in", signed_in
