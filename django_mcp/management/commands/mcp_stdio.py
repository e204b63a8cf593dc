"""``manage.py mcp_stdio``: serve the project's MCP server over stdio, for local clients that start it."""

from __future__ import annotations

import asyncio
import os
import stat
import sys
from collections.abc import AsyncIterator
from typing import Any, BinaryIO

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AnonymousUser
from django.core.management.base import BaseCommand, CommandError, CommandParser

from django_mcp.conf import get_settings
from django_mcp.endpoint import server_at
from django_mcp.server.lifecycle import lifecycle
from django_mcp.transport.stdio import StdioSession, aread_lines


class Command(BaseCommand):
    help = (
        "Serve the MCP server mounted at --path over stdio (newline-delimited JSON-RPC), as --user. "
        "For clients that start the server themselves: Claude Desktop, Claude Code, VS Code."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--path", default="/mcp", help="The endpoint whose server to serve (default: /mcp).")
        parser.add_argument(
            "--user",
            help="The username calls run as, with that user's permissions (default: an anonymous user).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        server = server_at(options["path"])
        if server is None:
            raise CommandError(
                f"No MCP endpoint at {options['path']!r} in the URLconf: mount one with mcp_path(), "
                "or name its path with --path"
            )
        user = self._user(options["user"])
        protocol_out = _take_stdout()
        try:
            session = StdioSession(server, user, _line_writer(protocol_out), options["path"])
            asyncio.run(_aserve(session, sys.stdin.buffer))
        finally:
            protocol_out.close()

    @staticmethod
    def _user(username: str | None) -> Any:
        if username is None:
            return AnonymousUser()
        user_model = get_user_model()
        try:
            user = user_model._default_manager.get_by_natural_key(username)
        except user_model.DoesNotExist:
            raise CommandError(f"No user {username!r}") from None
        if not getattr(user, "is_active", True):
            raise CommandError(f"The user {username!r} is inactive")
        return user


def _take_stdout() -> BinaryIO:
    """The process's stdout, for protocol lines only; anything else printed (a tool's ``print``, a library's
    output) goes to stderr from now on, where it cannot corrupt the stream."""
    sys.stdout.flush()
    protocol_out = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return protocol_out


def _line_writer(out: BinaryIO) -> Any:
    def write(line: bytes) -> None:
        out.write(line + b"\n")

    return write


async def _aserve(session: StdioSession, stdin: BinaryIO) -> None:
    await session.aserve(_alines(stdin))
    await lifecycle.agraceful_shutdown()  # as on SIGTERM: running tasks get the grace period


async def _alines(stdin: BinaryIO) -> AsyncIterator[bytes | None]:
    """``stdin``'s lines: read by the event loop from a pipe, else (a file, a terminal) in a thread;
    None for a line past ``MAX_REQUEST_BYTES``."""
    loop = asyncio.get_running_loop()
    limit = get_settings().MAX_REQUEST_BYTES + 1
    mode = os.fstat(stdin.fileno()).st_mode
    if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):
        reader = asyncio.StreamReader(limit=limit)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), stdin)
        async for line in aread_lines(reader):
            yield line
        return
    while True:
        line = await loop.run_in_executor(None, stdin.readline, limit)
        if not line:
            return
        if len(line) < limit or line.endswith(b"\n"):
            yield line
            continue
        rest = line
        while rest and not rest.endswith(b"\n"):  # the rest of a line too long to serve
            rest = await loop.run_in_executor(None, stdin.readline, limit)
        yield None
