"""The fastmcp + fastmcp-tasks target: the same three tools as the django_mcp bench server.

Run by the harness in its own virtualenv (fastmcp==4.1.4, fastmcp-tasks==4.1.4) under uvicorn:

    BENCH_DOCKET_URL=memory://  uvicorn --factory bench.servers.fastmcp_server:app ...
    BENCH_DOCKET_URL=redis://127.0.0.1:6379/5 ...

Stateless HTTP with JSON responses, as the 2026-07-28 wire wants; the tasks extension is
``TasksExtension`` on Docket (memory:// or Redis). ``BENCH_POLL_MS`` is the advertised
``pollIntervalMs`` (the django_mcp bench server advertises the same value).

Sign-in: with ``BENCH_JWT_PUBLIC_KEY_FILE`` set (a PEM RSA public key), every request must carry an
RS256 JWT from the bench's stand-in authorization server (``bench.servers.fastmcp_token``), checked
by fastmcp's ``JWTVerifier`` (signature, ``exp``, ``iss``, ``aud``), as a resource server behind an
external authorization server is deployed; no network call per request (the key is static, as a JWKS
would be once cached). Unset: no authentication.
"""

from __future__ import annotations

import asyncio
import os
from datetime import timedelta

from fastmcp import FastMCP
from fastmcp.server.auth.providers.jwt import JWTVerifier
from fastmcp.utilities.tasks import TaskConfig
from fastmcp_tasks import TasksExtension

POLL = timedelta(milliseconds=int(os.environ.get("BENCH_POLL_MS", "100")))
# Docket runs at most `concurrency` tasks at once; the memory scenario keeps 10k asleep.
CONCURRENCY = int(os.environ.get("BENCH_DOCKET_CONCURRENCY", "20000"))
JWT_ISSUER = "https://auth.bench.invalid"  # what bench.servers.fastmcp_token signs
JWT_AUDIENCE = "bench-fastmcp"


def auth() -> JWTVerifier | None:
    key_file = os.environ.get("BENCH_JWT_PUBLIC_KEY_FILE")
    if not key_file:
        return None
    with open(key_file) as fh:
        public_key = fh.read()
    return JWTVerifier(public_key=public_key, algorithm="RS256", issuer=JWT_ISSUER, audience=JWT_AUDIENCE)


def build() -> FastMCP:
    mcp = FastMCP("bench-fastmcp", auth=auth())
    mcp.add_extension(
        TasksExtension(
            url=os.environ.get("BENCH_DOCKET_URL", "memory://"),
            name=os.environ.get("BENCH_DOCKET_NAME", "bench"),
            concurrency=CONCURRENCY,
        )
    )

    @mcp.tool
    def echo(text: str) -> str:
        """A sync tool: returns its argument."""
        return text

    @mcp.tool(task=TaskConfig(mode="optional", poll_interval=POLL))
    async def instant() -> str:
        """A task that finishes at once."""
        return "done"

    @mcp.tool(task=TaskConfig(mode="optional", poll_interval=POLL))
    async def sleep(ms: int = 200) -> str:
        """A task that sleeps ``ms`` milliseconds."""
        await asyncio.sleep(ms / 1000)
        return "slept"

    return mcp


def app():  # uvicorn --factory
    return build().http_app(path="/mcp/", stateless_http=True, json_response=True)
