"""The audit log (DJANGO_MCP["AUDIT"]): a row per tools/call, arguments per the tool's rule, written off the
request's path, swept after the retention, read only in the admin."""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta
from io import StringIO
from unittest import mock

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import override_settings
from django.utils import timezone

from django_mcp import DefinitionError, ToolRegistry, tool_called
from django_mcp.audit import REDACTED, ToolCall, aflush
from django_mcp.models import PersonalToken
from tests.waiting import until
from tests.wire import post, request_body

pytestmark = pytest.mark.django_db(transaction=True)

PATH = "/mcp-oauth"
AUDITED = {"AUDIT": True}


async def signed_in(username="auditor"):
    user = await sync_to_async(User.objects.create_user)(username)
    _, token = await sync_to_async(PersonalToken.issue)(user, "audit", scope="mcp notes:write")
    return user, token


async def call(client, token, name, arguments=None):
    body = request_body("tools/call", {"name": name, "arguments": arguments or {}})
    response = await post(client, body, path=PATH, headers={"Authorization": f"Bearer {token}"})
    return json.loads(response.content)


async def rows(count):
    for _ in range(200):  # written in the background
        found = [row async for row in ToolCall.objects.order_by("created_at")]
        if len(found) >= count:
            return found
        await asyncio.sleep(0.02)
    raise AssertionError(f"{count} audit rows expected, found {len(found)}")


async def test_no_audit_by_default(async_client):
    user, token = await signed_in()
    await call(async_client, token, "whoami")
    await aflush()  # what a shutdown writes: a row queued by the call would be written now
    assert await ToolCall.objects.acount() == 0
    assert not any(key == "django_mcp.audit" for key, _ in [(r[0][0], r) for r in tool_called.receivers])


@override_settings(DJANGO_MCP=AUDITED)
async def test_a_call_is_recorded_with_who_what_outcome_and_duration(async_client):
    user, token = await signed_in()
    await call(async_client, token, "whoami")
    [row] = await rows(1)
    assert (row.user_id, row.caller, row.tool, row.outcome, row.server) == (
        user.pk,
        "auditor",
        "whoami",
        "result",
        "mcp_oauth",
    )
    assert row.duration_ms >= 0 and row.arguments is None  # AUDIT_ARGUMENTS defaults to "none"


@override_settings(DJANGO_MCP=AUDITED)
async def test_arguments_are_kept_as_each_tools_rule_says(async_client):
    _, token = await signed_in()
    await call(async_client, token, "echo", {"text": "kept"})
    await call(async_client, token, "write_note", {"text": "secret"})
    await call(async_client, token, "render", {"scene": "x"})
    by_tool = {row.tool: row for row in await rows(3)}
    assert by_tool["echo"].arguments == {"text": "kept"}  # audit_arguments="all"
    assert by_tool["write_note"].arguments == {"text": REDACTED}  # audit_arguments=["text"]
    assert by_tool["render"].arguments is None  # the default


@override_settings(DJANGO_MCP={**AUDITED, "AUDIT_ARGUMENTS": "all"})
async def test_the_default_rule_is_a_setting(async_client):
    _, token = await signed_in()
    await call(async_client, token, "render", {"scene": "x"})
    [row] = await rows(1)
    assert row.arguments == {"scene": "x"}


@override_settings(DJANGO_MCP=AUDITED)
async def test_outcomes_errors_tasks_and_refusals(async_client):
    _, token = await signed_in()
    await call(async_client, token, "echo", {"text": 5})  # -32602: invalid arguments
    body = request_body(
        "tools/call", {"name": "slow_report"}, capabilities={"extensions": {"io.modelcontextprotocol/tasks": {}}}
    )
    await post(async_client, body, path=PATH, headers={"Authorization": f"Bearer {token}"})
    outcomes = {row.tool: row.outcome for row in await rows(2)}
    assert outcomes == {"echo": "refused", "slow_report": "task"}


@override_settings(DJANGO_MCP=AUDITED)
async def test_a_failed_write_never_fails_the_call(async_client, caplog):
    _, token = await signed_in()
    with mock.patch("django_mcp.audit._save", side_effect=RuntimeError("disk full")):
        answer = await call(async_client, token, "whoami")
        await until(lambda: "Could not write" in caplog.text, what="the failed write's warning")
    assert answer["result"]["content"][0]["text"] == "auditor"
    assert "Could not write 1 audit row(s) (whoami …)" in caplog.text


@override_settings(DJANGO_MCP={**AUDITED, "AUDIT_RETENTION_SECONDS": 3600})
async def test_old_rows_are_swept_by_the_command(async_client):
    old = await ToolCall.objects.acreate(
        created_at=timezone.now() - timedelta(hours=2),
        caller="x",
        server="s",
        tool="t",
        outcome="result",
        duration_ms=1,
    )
    fresh = await ToolCall.objects.acreate(caller="x", server="s", tool="t", outcome="result", duration_ms=1)
    out = StringIO()
    await sync_to_async(call_command)("mcp_clear_audit", stdout=out)
    assert "Deleted 1 audit row(s)." in out.getvalue()
    assert [row.pk async for row in ToolCall.objects.all()] == [fresh.pk] and old.pk != fresh.pk


def test_the_admin_shows_the_log_read_only(admin_client):
    ToolCall.objects.create(caller="alice", server="mcp", tool="whoami", outcome="result", duration_ms=1.5)
    page = admin_client.get("/admin/django_mcp/toolcall/")
    assert page.status_code == 200 and b"whoami" in page.content
    assert admin_client.get("/admin/django_mcp/toolcall/add/").status_code == 403


@pytest.mark.parametrize("rule", ["some", 5, [1]])
def test_a_bad_audit_rule_is_a_definition_error(rule):
    with pytest.raises(DefinitionError, match="audit_arguments"):
        ToolRegistry().register(lambda request: 1, name="t", audit_arguments=rule)


@override_settings(DJANGO_MCP=AUDITED)
async def test_calls_close_together_are_written_in_one_insert(async_client):
    from django_mcp import audit

    _, token = await signed_in()
    real = audit._save
    with mock.patch("django_mcp.audit._save", side_effect=real) as save:
        await asyncio.gather(*(call(async_client, token, "whoami") for _ in range(5)))
        await rows(5)
    assert save.call_count < 5 and sum(len(c.args[0]) for c in save.call_args_list) == 5


@override_settings(DJANGO_MCP=AUDITED)
async def test_what_waits_is_written_at_shutdown():
    from django_mcp import audit

    audit._pending.append({"caller": "x", "server": "s", "tool": "late", "outcome": "result", "duration_ms": 1})
    await audit.aflush(0)
    assert [row.tool async for row in ToolCall.objects.all()] == ["late"] and not audit._pending
