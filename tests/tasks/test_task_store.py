"""The store (tasks/store/): caps counted without scanning, what the rows hold, reads and writes as the ORM's."""

from __future__ import annotations

import os
import time
import uuid
from typing import Any

import pytest
from asgiref.sync import sync_to_async

from django_mcp.models import Task
from django_mcp.tasks import McpTasks
from django_mcp.tasks.models import TaskQuota
from django_mcp.tasks.wire import DETAILED_FIELDS
from tests.task_calls import CLIENT, EXT, create, error_of, get, rpc, wait_for
from tests.wire import post_from, request_body

pytestmark = pytest.mark.django_db(transaction=True)


# -- caps per server and per caller, counted without scanning the table ---------------------------


async def test_one_caller_cannot_starve_the_others(async_client):
    def as_(tenant):
        return {"X-Tenant": tenant}

    path = "/mcp-owner-cap/"
    for _ in range(2):
        await create(async_client, "slow", path=path, headers=as_("alice"))
    refused = await rpc(async_client, "tools/call", {"name": "slow"}, path=path, headers=as_("alice"), status=200)
    assert error_of(refused)["code"] == -32603 and error_of(refused)["data"] == {"maxTasksPerOwner": 2}
    for _ in range(2):
        await create(async_client, "slow", path=path, headers=as_("bob"))  # alice at her cap does not stop bob
    await create(async_client, "slow", path=path, headers=as_("carol"))
    full = await rpc(async_client, "tools/call", {"name": "slow"}, path=path, headers=as_("dave"), status=200)
    assert error_of(full)["data"] == {"maxTasks": 5}  # the server's own cap still holds


@pytest.mark.parametrize("max_tasks, per_owner", [(1000, 100), (25, 10), (3, 3), (200_000, 20_000)])
def test_the_per_caller_cap_is_on_by_default(max_tasks, per_owner):
    assert McpTasks(max_tasks=max_tasks).max_tasks_per_owner == per_owner
    assert McpTasks(max_tasks=max_tasks, max_tasks_per_owner=None).max_tasks_per_owner is None


async def test_anonymous_callers_are_capped_per_address_and_still_share_their_tasks(async_client):
    """/mcp-fair/: max_tasks=25, so 10 per caller; anonymous callers counted by client address."""
    body = request_body("tools/call", {"name": "slow", "arguments": {}}, capabilities=CLIENT)
    made = [(await post_from("10.1.0.1", body, "/mcp-fair/")).json()["result"] for _ in range(10)]
    assert {m["resultType"] for m in made} == {"task"}
    refused = (await post_from("10.1.0.1", body, "/mcp-fair/")).json()
    assert error_of(refused)["data"] == {"maxTasksPerOwner": 10}
    other = (await post_from("10.1.0.2", body, "/mcp-fair/")).json()["result"]
    assert other["resultType"] == "task"  # another anonymous client is not locked out
    # For the cap only: every anonymous caller still reads the same tasks.
    seen = (
        await post_from(
            "10.1.0.2", request_body("tasks/get", {"taskId": made[0]["taskId"]}, capabilities=CLIENT), "/mcp-fair/"
        )
    ).json()
    assert seen["result"]["taskId"] == made[0]["taskId"]
    rows = {row async for row in Task.objects.filter(scope="mcp_fair").values_list("owner", "counted_as").distinct()}
    owners, counted = {o for o, _ in rows}, {c for _, c in rows}
    assert len(owners) == 1 and len(counted) == 2


async def test_each_server_counts_its_own_cap(async_client):
    for _ in range(3):
        await create(async_client, "slow", path="/mcp-small/")
    assert error_of(await rpc(async_client, "tools/call", {"name": "slow"}, path="/mcp-small/", status=200))
    assert (await create(async_client, "slow", path="/mcp-owner-cap/"))["resultType"] == "task"


async def test_counters_follow_deletions_and_can_be_rebuilt(async_client):
    from io import StringIO

    from django.core.management import call_command

    ids = [(await create(async_client, "slow", path="/mcp-small/"))["taskId"] for _ in range(3)]
    await Task.objects.filter(pk__in=ids).adelete()  # behind the store's back: the counter still says 3
    assert error_of(await rpc(async_client, "tools/call", {"name": "slow"}, path="/mcp-small/", status=200))
    await sync_to_async(call_command)("mcp_clear_tasks", "--recount", stdout=StringIO())
    assert (await create(async_client, "slow", path="/mcp-small/"))["resultType"] == "task"


async def test_a_nul_character_in_arguments_or_answers_is_refused_as_params(async_client):
    body = await rpc(async_client, "tools/call", {"name": "quick", "arguments": {"text": "a\u0000b"}}, status=400)
    assert error_of(body)["code"] == -32602 and "NUL" in error_of(body)["message"]
    assert await Task.objects.filter(tool="quick").acount() == 0


@pytest.mark.parametrize("bad", ["a\u0000b", "a\ud800b", "\udfff"], ids=["nul", "high", "low"])
async def test_what_jsonb_cannot_hold_is_refused_as_params_everywhere_it_is_stored(async_client, bad):
    """NUL and lone surrogates: PostgreSQL's jsonb refuses both, so every backend refuses them (-32602)."""
    why = "NUL" if "\x00" in bad else "lone surrogate"
    body = await rpc(async_client, "tools/call", {"name": "quick", "arguments": {"text": bad}}, status=400)
    assert error_of(body)["code"] == -32602 and why in error_of(body)["message"]
    body = await rpc(async_client, "tools/call", {"name": "declared", "arguments": {"text": "x", bad: 1}}, status=400)
    assert why in error_of(body)["message"]
    assert await Task.objects.acount() == 0
    task_id = (await create(async_client, "declared"))["taskId"]
    await wait_for(async_client, task_id, "input_required")
    update = {"taskId": task_id, "inputResponses": {"ok": {"action": "accept", "content": {"note": bad}}}}
    body = await rpc(async_client, "tasks/update", update, status=400)
    assert error_of(body)["code"] == -32602 and "inputResponses" in error_of(body)["message"]
    assert (await get(async_client, task_id))["result"]["status"] == "input_required"  # nothing was stored


async def test_the_primary_key_read_loads_a_task_exactly_as_the_orm_does(async_client):
    # operations._read builds its SQL and converters from the model once; every field must come back as
    # the ORM loads it (UUIDs, datetimes, JSON, the user foreign key), on SQLite and on PostgreSQL.
    from django.contrib.auth.models import User

    from django_mcp.tasks.store import operations

    user = await User.objects.acreate(username="reader")
    handle = await create(async_client, "slow", {"seconds": 30}, caps=EXT)
    await Task.objects.filter(pk=handle["taskId"]).aupdate(
        user=user, result={"content": [{"type": "text", "text": "é"}]}, input_requests={"k": {"method": "x"}}
    )
    orm = await Task.objects.aget(pk=handle["taskId"])
    fast = await sync_to_async(operations._read)(uuid.UUID(handle["taskId"]), orm.owner)

    def fields(task: Task) -> dict[str, Any]:
        return {f.attname: getattr(task, f.attname) for f in Task._meta.concrete_fields}

    assert fast is not None and fields(fast) == fields(orm)
    assert (fast._state.adding, fast._state.db) == (False, orm._state.db)
    assert await sync_to_async(operations._read)(uuid.UUID(handle["taskId"]), "someone else") is None
    assert await sync_to_async(operations._read)(uuid.uuid4()) is None


async def test_creation_inserts_every_field_as_the_orm_would(async_client):
    # operations.create writes its INSERT from the model once (no save()): what the ORM loads back must
    # be the row the store returned (UUID, datetimes, JSON with non-ASCII, the user foreign key).
    from django.contrib.auth.models import User

    from django_mcp.tasks.store import operations

    user = await User.objects.acreate(username="creator")
    row = await sync_to_async(operations.create)(
        tool="quick",
        owner="sha256:someone",
        scope="tests",
        arguments={"text": "é\u2028", "n": [1, 2.5, None, True]},
        status_message="Working",
        ttl_ms=60_000,
        poll_interval_ms=500,
        max_tasks=10,
        max_tasks_per_owner=None,
        node="node-1",
        lease_seconds=30,
        request_meta={"progressToken": 7},
        user=user,
        owner_kind="user",
    )
    orm = await Task.objects.select_related(None).aget(pk=row.pk)

    def fields(task: Task) -> dict[str, Any]:
        return {f.attname: getattr(task, f.attname) for f in Task._meta.concrete_fields}

    assert fields(orm) == fields(row) and not row._state.adding
    assert orm.arguments == {"text": "é\u2028", "n": [1, 2.5, None, True]} and orm.user_id == user.pk


async def test_a_task_run_where_it_was_created_stores_no_request_metadata(async_client):
    # Only a worker rebuilds the request from it (test_fleet.py): the creating process has the request.
    handle = await create(async_client, "slow", {"seconds": 30})
    task = await Task.objects.aget(pk=handle["taskId"])
    assert (task.backend, task.request_meta, task.status) == ("", {}, "working")


@pytest.mark.parametrize("returning", [True, False], ids=["update-returning", "orm-update-then-read"])
async def test_finishing_writes_and_returns_the_task_as_the_orm_sees_it(async_client, monkeypatch, returning):
    # operations.finish is one UPDATE … RETURNING built from the model (or, where UPDATE returns no rows,
    # the ORM's update and a read): a compare-and-set on the status whose returned row must be what
    # the ORM then loads (JSON, datetimes), and None once terminal.
    from django.db import connection

    from django_mcp.tasks.store import operations, prepared

    if returning and connection.vendor not in ("postgresql", "sqlite"):
        pytest.skip(f"{connection.vendor} has no UPDATE … RETURNING")
    monkeypatch.setattr(prepared, "update_returns_rows", lambda conn: returning)

    handle = await create(async_client, "slow", {"seconds": 30}, caps=EXT)
    await sync_to_async(operations.set_status_message)(handle["taskId"], "halfway")
    result = {"content": [{"type": "text", "text": "é\u2028"}], "structuredContent": {"n": [1, None]}}
    done = await sync_to_async(operations.finish)(handle["taskId"], "completed", result=result, message="done")
    orm = await Task.objects.aget(pk=handle["taskId"])

    def fields(task: Task) -> dict[str, Any]:
        deferred = task.get_deferred_fields()
        return {f.attname: getattr(task, f.attname) for f in Task._meta.concrete_fields if f.attname not in deferred}

    # What a finished task is published with comes back; the rest (arguments, answers …) stays deferred.
    assert done is not None and fields(done) == {k: v for k, v in fields(orm).items() if k in fields(done)}
    assert set(fields(done)) == {"id", "expires_at", "watched", "tool", *DETAILED_FIELDS}
    assert (orm.status, orm.status_message, orm.result, orm.input_requests) == ("completed", "done", result, {})
    assert orm.updated_at > orm.created_at
    assert await sync_to_async(operations.finish)(handle["taskId"], "failed", error={"x": 1}) is None
    assert await sync_to_async(operations.set_status_message)(handle["taskId"], "again") is None
    assert (await Task.objects.aget(pk=handle["taskId"])).status == "completed"


@pytest.mark.skipif(os.environ.get("DJANGO_MCP_DATABASE", "sqlite") != "sqlite", reason="SQLite's one-writer rule")
def test_on_sqlite_the_store_threads_write_one_at_a_time_and_read_together():
    # A SQLite writer that finds the file locked sleeps in its busy handler for milliseconds; the
    # store's own threads queue on a lock instead (3× the creations per second in bench/).
    from concurrent.futures import ThreadPoolExecutor
    from threading import Lock

    from django_mcp.tasks.store import task_store

    inside, most, count = 0, 0, Lock()

    def work() -> None:
        nonlocal inside, most
        with count:
            inside += 1
            most = max(most, inside)
        time.sleep(0.02)
        with count:
            inside -= 1

    seen = {}
    for writes in (True, False):
        inside = most = 0
        guarded = task_store.guarded(work, writes=writes)
        with ThreadPoolExecutor(4) as pool:
            for future in [pool.submit(guarded) for _ in range(8)]:
                future.result()
        seen[writes] = most
    assert seen[True] == 1 and seen[False] > 1, seen


def test_a_creation_whose_insert_fails_leaves_the_counters_as_they_were():
    from django.db import IntegrityError

    from django_mcp.tasks.store import operations

    fields = {
        "tool": "t", "owner": "o", "scope": "give-back", "arguments": {}, "status_message": "", "ttl_ms": None,
        "poll_interval_ms": 100, "max_tasks": 5, "max_tasks_per_owner": 3, "node": "n", "lease_seconds": 30,
    }  # fmt: skip
    first = operations.create(**fields)
    with pytest.raises(IntegrityError):
        operations.create(task_id=first.id, **fields)  # the same id: the insert fails after the counting
    counts = dict(TaskQuota.objects.filter(scope="give-back").values_list("owner", "count"))
    assert counts == {"": 1, "o": 1}


@pytest.mark.skipif(os.environ.get("DJANGO_MCP_DATABASE") != "postgres", reason="PostgreSQL's commit modes")
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("per_owner", [None, 3], ids=["server-cap", "server-and-owner-caps"])
def test_on_postgresql_the_counting_commits_lazily_and_leaves_the_session_as_it_was(per_owner, settings):
    settings.DJANGO_MCP = {**settings.DJANGO_MCP, "TASK_FAST_PATHS": True}  # one of the fast paths
    # With only the server's cap, the counting is one autocommit statement whose own commit skips
    # the WAL flush (SET LOCAL in a transaction would cost three more round trips); two counters move
    # together in a transaction. Either way the connection keeps its synchronous_commit.
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from django_mcp.tasks.store import errors, operations

    fields = {
        "tool": "t", "owner": "o", "scope": "lazily", "arguments": {}, "status_message": "", "ttl_ms": None,
        "poll_interval_ms": 100, "max_tasks": 3, "max_tasks_per_owner": per_owner, "node": "n", "lease_seconds": 30,
    }  # fmt: skip
    operations.create(**fields)  # makes the counter rows
    with CaptureQueriesContext(connection) as queries:
        operations.create(**fields)
    statements = [query["sql"].split()[0] for query in queries]  # BEGIN and COMMIT where Django logs them
    if per_owner is None:
        assert statements == ["UPDATE", "INSERT"]
        assert "set_config('synchronous_commit', 'off', true)" in queries[0]["sql"]
    else:
        assert [s for s in statements if s not in ("BEGIN", "COMMIT")] == ["SET", "UPDATE", "UPDATE", "INSERT"]
    with connection.cursor() as cursor:
        cursor.execute("SHOW synchronous_commit")
        assert cursor.fetchone()[0] == "on"
    operations.create(**fields)
    with pytest.raises(errors.TaskLimitReached):  # the cap still counts every creation, and refuses the 4th
        operations.create(**fields)
    counts = dict(TaskQuota.objects.filter(scope="lazily").values_list("owner", "count"))
    assert counts == ({"": 3} if per_owner is None else {"": 3, "o": 3})


def test_a_counter_row_committed_by_a_concurrent_first_creation_is_not_taken_for_the_cap(monkeypatch):
    # Two first creations race: one's UPDATE finds no counter row, the other's row is committed
    # before the first one looks again. The first must count on that row, not refuse at the cap
    # (seen in bench/: one of 1,000 concurrent first creations refused "at most 2000000 tasks").
    from django_mcp.tasks.store import caps, operations

    fields = {
        "tool": "t", "owner": "o", "scope": "race", "arguments": {}, "status_message": "", "ttl_ms": None,
        "poll_interval_ms": 100, "max_tasks": 5, "max_tasks_per_owner": 3, "node": "n", "lease_seconds": 30,
    }  # fmt: skip
    operations.create(**fields)  # both counter rows exist, at 1
    increment, missed = caps.increment, []

    def miss_once_each(scope: str, owner: str, limit: int, **kwargs: Any) -> bool:
        if owner not in missed:  # as if the row were not there yet when this UPDATE ran
            missed.append(owner)
            return False
        return increment(scope, owner, limit, **kwargs)

    monkeypatch.setattr(caps, "increment", miss_once_each)  # counting alone, and in take_place
    monkeypatch.setattr(operations, "increment", miss_once_each)
    operations.create(**fields)
    assert missed == ["", "o"]
    counts = dict(TaskQuota.objects.filter(scope="race").values_list("owner", "count"))
    assert counts == {"": 2, "o": 2}


@pytest.mark.skipif(os.environ.get("DJANGO_MCP_DATABASE", "sqlite") == "sqlite", reason="concurrent writers: a server")
@pytest.mark.django_db(transaction=True)
def test_concurrent_first_creations_all_count_and_none_is_refused():
    # The same race on a real database: creations on threads of their own, all before any counter
    # row exists (the store makes it from a count, once). None may be refused below the caps.
    from concurrent.futures import ThreadPoolExecutor
    from threading import Barrier

    from django_mcp.tasks.store import operations, task_store

    fields = {
        "tool": "t", "owner": "o", "scope": "first", "arguments": {}, "status_message": "", "ttl_ms": None,
        "poll_interval_ms": 100, "max_tasks": 100, "max_tasks_per_owner": None, "node": "n", "lease_seconds": 30,
    }  # fmt: skip
    create = task_store.guarded(operations.create, writes=True)

    def create_at_once(start: Barrier, **given: Any) -> Task:
        start.wait(timeout=10)
        return create(**given)

    for round_no, per_owner in enumerate((None, 50)):
        scope, start = f"first-{round_no}", Barrier(12)
        given = {**fields, "scope": scope, "max_tasks_per_owner": per_owner}
        with ThreadPoolExecutor(12) as pool:
            created = [future.result() for future in [pool.submit(create_at_once, start, **given) for _ in range(12)]]
        counts = dict(TaskQuota.objects.filter(scope=scope).values_list("owner", "count"))
        assert len({task.pk for task in created}) == 12
        assert counts == ({"": 12} if per_owner is None else {"": 12, "o": 12})


def test_giving_back_a_place_while_the_database_is_down_logs_and_does_not_mask_the_error(caplog):
    from unittest import mock

    from django.db import OperationalError

    from django_mcp.tasks.store import caps

    with mock.patch("django.db.models.query.QuerySet.update", side_effect=OperationalError("down")):
        caps.give_back("give-back", "o")  # called while the insert's own error propagates
    assert "mcp_clear_tasks --recount" in caplog.text


# -- a task that is not there (a bad id, finished or deleted meanwhile) --------------------------


def test_operations_on_a_task_that_is_not_there_answer_none():
    from django_mcp.tasks.store import operations
    from tests.task_rows import OWNER, make_task

    done = make_task(status="completed")
    missing = "00000000-0000-4000-8000-000000000000"
    for task_id in (str(done.id), missing):
        assert operations.park(task_id, {"k": {"method": "elicitation/create", "params": {}}}) is None
        assert operations.take_answers(task_id, ["k"]) is None
    for task_id in ("not-a-task-id", missing):
        assert operations.answer(task_id, OWNER, {"k": {}}) == (None, [])
        assert operations.request_cancel(task_id, OWNER) is None
    assert operations.fail_if_owner_gone(done, {"code": -32603, "message": "gone"}) is done  # finished: as is
    assert Task.objects.get(pk=done.pk).status == "completed"
