"""Sign in to a django-mcp server with the official Python SDK's OAuth client (``mcp`` 2.x), then use it.

``<venv python> py_oauth_client.py URL --username U --password P [--cimd CLIENT_ID_URL] [--mode auto|legacy]``

Runs in the SDK's own venv (``install.py``) and imports nothing from this repository. The SDK does
the OAuth work: protected-resource discovery from the 401, authorization-server metadata, dynamic
client registration (or, with ``--cimd``, a client ID metadata document), authorization code with
PKCE S256, the ``iss`` check, the token request with ``resource``. This script plays the browser in
``redirect_handler``: it opens the authorization URL, signs in on the login page, allows on the
consent page and hands the redirect's ``code``, ``state`` and ``iss`` to ``callback_handler``.
Steps: ``whoami`` (must name the user), ``echo``, then a task through the tasks extension on the
same signed-in HTTP client (``render``, polled with ``tasks/get``). Prints one JSON
summary on stdout; exit code 0 = every step passed.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
import traceback
import uuid
from html import unescape
from typing import Any
from urllib.parse import parse_qs, urljoin, urlsplit

import anyio
import httpx2
import mcp.types as types
from mcp import Client
from mcp.client.auth import OAuthClientProvider, TokenStorage
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

REDIRECT_URI = "http://127.0.0.1:3030/callback"
EXTENSION = "io.modelcontextprotocol/tasks"
INPUT = re.compile(r"<input[^>]*>", re.I)


class MemoryStorage(TokenStorage):
    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


def form_fields(html: str) -> dict[str, str]:
    fields = {}
    for tag in INPUT.findall(html):
        name, value = re.search(r'name="([^"]*)"', tag), re.search(r'value="([^"]*)"', tag)
        if name:
            fields[unescape(name.group(1))] = unescape(value.group(1)) if value else ""
    return fields


class Browser:
    """A user at a browser: signs in, then allows the client on the consent page."""

    def __init__(self, username: str, password: str, summary: dict[str, Any]) -> None:
        self.username, self.password, self.summary = username, password, summary
        self.callback: dict[str, list[str]] = {}

    async def authorize(self, url: str) -> None:
        self.summary["authorization_url"] = url.split("?")[0]
        async with httpx2.AsyncClient(follow_redirects=False, timeout=20) as web:
            response = await web.get(url)
            for _ in range(10):
                location = response.headers.get("location")
                if response.status_code in (301, 302, 303) and location:
                    if location.startswith(REDIRECT_URI):
                        self.callback = parse_qs(urlsplit(location).query)
                        return
                    response = await web.get(urljoin(str(response.url), location))
                    continue
                page, fields = response.text, form_fields(response.text)
                target = str(response.url)
                if "password" in fields:  # the login page
                    fields.update(username=self.username, password=self.password)
                    self.summary["signed_in_at"] = urlsplit(target).path
                elif "allow" in page.lower() or "authorize" in page.lower():  # the consent page
                    fields["allow"] = "Authorize"
                    self.summary["consented_at"] = urlsplit(target).path
                else:
                    raise RuntimeError(f"unexpected page {response.status_code} at {target}: {page[:300]}")
                response = await web.post(target, data=fields, headers={"Referer": target})
            raise RuntimeError("too many redirects")

    async def result(self) -> AuthorizationCodeResult:
        value = lambda key: self.callback.get(key, [None])[0]  # noqa: E731
        if not value("code"):
            raise RuntimeError(f"no authorization code in the redirect: {self.callback}")
        return AuthorizationCodeResult(code=value("code"), state=value("state"), iss=value("iss"))


async def drive(options: argparse.Namespace, summary: dict[str, Any]) -> None:
    browser = Browser(options.username, options.password, summary)
    storage = MemoryStorage()
    provider = OAuthClientProvider(
        options.url,
        client_metadata=OAuthClientMetadata(
            client_name="django-mcp live test",
            redirect_uris=[REDIRECT_URI],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method="none",
        ),
        storage=storage,
        redirect_handler=browser.authorize,
        callback_handler=browser.result,
        client_metadata_url=options.cimd,
    )
    async with httpx2.AsyncClient(auth=provider, timeout=30, follow_redirects=True) as http:
        step = "connect"
        try:
            client = Client(streamable_http_client(options.url, http_client=http), mode=options.mode)
            async with client:
                summary["registered_as"] = storage.client.client_id if storage.client else None
                summary["scope"] = storage.tokens.scope if storage.tokens else None
                step = "whoami"
                me = await client.call_tool("whoami", {})
                summary["whoami"] = "".join(b.text for b in me.content if isinstance(b, types.TextContent))
                if summary["whoami"] != options.username:
                    raise RuntimeError(f"whoami answered {summary['whoami']!r}")
                step = "echo"
                echoed = await client.call_tool("echo", {"text": "hi"})
                summary["echo"] = "".join(b.text for b in echoed.content if isinstance(b, types.TextContent))
            step = "task"
            summary["task"] = await run_task(http, options.url)
        except BaseException as exc:
            summary["failed_step"] = step
            raise exc


async def run_task(http: httpx2.AsyncClient, url: str) -> dict[str, Any]:
    """A task on the signed-in client: the tasks extension by hand (the SDK has no tasks client)."""

    async def rpc(method: str, params: dict[str, Any], name: str) -> dict[str, Any]:
        params = {
            **params,
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {"extensions": {EXTENSION: {}}},
            },
        }
        body = {"jsonrpc": "2.0", "id": str(uuid.uuid4()), "method": method, "params": params}
        headers = {
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": "2026-07-28",
            "Mcp-Method": method,
            "Mcp-Name": name,
        }
        response = await http.post(url, json=body, headers=headers)
        return response.json()

    created = await rpc("tools/call", {"name": "render", "arguments": {"scene": "x", "frames": 2}}, "render")
    task_id = created["result"]["taskId"]
    for _ in range(200):
        got = await rpc("tasks/get", {"taskId": task_id}, task_id)
        result = got["result"]
        if result["status"] not in ("working", "submitted"):
            text = "".join(block.get("text", "") for block in (result.get("result") or {}).get("content", []))
            return {"status": result["status"], "text": text}
        await anyio.sleep(0.05)
    raise RuntimeError(f"task {task_id} did not finish")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("url")
    parser.add_argument("--username", required=True)
    parser.add_argument("--password", required=True)
    parser.add_argument("--cimd", default=None)
    parser.add_argument("--mode", default="auto", choices=["auto", "legacy"])
    options = parser.parse_args()
    summary: dict[str, Any] = {"client": "mcp-python-oauth", "mode": options.mode, "cimd": bool(options.cimd)}
    started = time.monotonic()
    try:
        anyio.run(lambda: _bounded(options, summary))
        summary["ok"] = True
    except BaseException as exc:  # report, never hang or crash without a summary
        summary["ok"] = False
        summary["error"] = f"{type(exc).__name__}: {exc}"
        summary["traceback"] = traceback.format_exc()[-2000:]
    summary["ms"] = round((time.monotonic() - started) * 1000)
    print(json.dumps(summary))  # noqa: T201 - the summary the test reads
    return 0 if summary["ok"] else 1


async def _bounded(options: argparse.Namespace, summary: dict[str, Any]) -> None:
    with anyio.fail_after(60):
        await drive(options, summary)


if __name__ == "__main__":
    sys.exit(main())
