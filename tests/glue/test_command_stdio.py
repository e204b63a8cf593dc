"""``manage.py mcp_stdio`` in-process: its refusals, reading stdin, keeping stdout for protocol lines, and a whole
run from ``handle`` (tests/live/test_stdio.py starts it as clients do)."""

from __future__ import annotations

import io
import json
import os
import sys
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command

from django_mcp.management.commands import mcp_stdio
from django_mcp.server.lifecycle import lifecycle

pytestmark = pytest.mark.django_db(transaction=True)

META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--user", "nobody"), "No user 'nobody'"),
        (("--user", "asleep"), "The user 'asleep' is inactive"),
        (("--path", "/elsewhere"), "No MCP endpoint at '/elsewhere' in the URLconf"),
    ],
)
def test_what_the_command_refuses_before_it_serves(args, message):
    User.objects.create_user("asleep", is_active=False)
    with pytest.raises(CommandError, match=message):
        call_command("mcp_stdio", *args)


async def _read(stdin: Any) -> list[bytes | None]:
    return [line async for line in mcp_stdio._alines(stdin)]


@pytest.mark.parametrize("kind", ["pipe", "file"])
async def test_stdin_is_read_line_by_line_from_a_pipe_or_a_file(kind, tmp_path, settings):
    settings.DJANGO_MCP = {"MAX_REQUEST_BYTES": 32}
    data = b'{"a": 1}\n' + b"x" * 100 + b"\n" + b'{"b": 2}\n{"last": 3}'
    if kind == "pipe":
        read_end, write_end = os.pipe()
        os.write(write_end, data)
        os.close(write_end)
        stdin = os.fdopen(read_end, "rb", buffering=0)
    else:
        (tmp_path / "in").write_bytes(data)
        stdin = (tmp_path / "in").open("rb")
    with stdin:
        lines = await _read(stdin)
    assert lines == [b'{"a": 1}\n', None, b'{"b": 2}\n', b'{"last": 3}']


def test_stdout_keeps_protocol_lines_and_everything_else_goes_to_stderr(capfd):
    saved_out, saved_sys = os.dup(1), sys.stdout
    try:
        protocol = mcp_stdio._take_stdout()
        mcp_stdio._line_writer(protocol)(b'{"jsonrpc": "2.0"}')
        print("a tool's print")  # noqa: T201 - what a tool might do
        sys.stdout.flush()
        os.write(1, b"a library writing to fd 1\n")
        protocol.close()
    finally:
        os.dup2(saved_out, 1)
        os.close(saved_out)
        sys.stdout = saved_sys
    out, err = capfd.readouterr()
    assert out == '{"jsonrpc": "2.0"}\n'
    assert "a tool's print" in err and "a library writing to fd 1" in err


def test_a_whole_run_from_stdin_to_stdout(monkeypatch, tmp_path):
    """handle(): the server at --path, the user named, every line answered, then the process's shutdown."""
    User.objects.create_user("ada")
    call = {"name": "add", "arguments": {"a": 2, "b": 3}, "_meta": META}
    lines = [{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call}, "not json"]
    (tmp_path / "in").write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines))
    written = io.BytesIO()
    shutdowns = []

    async def no_process_shutdown() -> None:  # the real one marks this whole test process as stopping
        shutdowns.append(True)

    monkeypatch.setattr(mcp_stdio, "_take_stdout", lambda: _Unclosed(written))
    monkeypatch.setattr(lifecycle, "agraceful_shutdown", no_process_shutdown)
    with (tmp_path / "in").open("rb") as stdin:
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(stdin))
        call_command("mcp_stdio", "--user", "ada")
    answers = {answer["id"]: answer for answer in map(json.loads, written.getvalue().splitlines())}
    assert answers[None]["error"]["code"] == -32700
    assert answers[1]["result"]["content"][0]["text"] == "5"
    assert shutdowns == [True]


class _Unclosed(io.BufferedIOBase):
    """A stand-in for the duplicated stdout whose ``close()`` leaves the bytes readable."""

    def __init__(self, target: io.BytesIO) -> None:
        self.target = target

    def write(self, data: Any) -> int:
        return self.target.write(data)
