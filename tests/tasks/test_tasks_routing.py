"""Tasks on a database of their own: with a router sending the ``django_mcp`` app elsewhere, the
store's transactions, counters and SQL all happen there, and nothing of it on ``default``.

The routed database is a SQLite file made for the test (whatever ``default`` is), migrated, and
dropped again: a misrouted statement either fails (a ``select_for_update`` outside a transaction of
its own database) or leaves rows on ``default``, which the tests look for.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.core.management import call_command
from django.db import connections
from django.test import override_settings
from django.utils import timezone

from django_mcp.models import Task
from django_mcp.tasks.models import TaskQuota
from django_mcp.tasks.store import caps, errors, loop_sqlite, operations, task_store

ALIAS = "mcp_tasks"

pytestmark = pytest.mark.django_db(transaction=True, databases="__all__")


class TasksElsewhere:
    """Send the django_mcp app to ``ALIAS``; everything else stays where it was."""

    def db_for_read(self, model: type[Any], **hints: Any) -> str | None:
        return ALIAS if model._meta.app_label == "django_mcp" else None

    def db_for_write(self, model: type[Any], **hints: Any) -> str | None:
        return ALIAS if model._meta.app_label == "django_mcp" else None


@pytest.fixture(scope="module")
def tasks_elsewhere(django_db_setup: None, django_db_blocker: Any, tmp_path_factory: Any) -> Iterator[str]:
    # Module-scoped, so it exists before each test's test case takes every database ("__all__",
    # below) and is flushed with ``default`` after each test.
    with django_db_blocker.unblock():
        connections.settings[ALIAS] = connections.configure_settings(
            {
                "default": connections.settings["default"],  # configure_settings wants one
                ALIAS: {
                    "ENGINE": "django.db.backends.sqlite3",
                    "NAME": str(tmp_path_factory.mktemp("routed") / "tasks.sqlite3"),
                    "OPTIONS": {
                        "transaction_mode": "IMMEDIATE",
                        "timeout": 20,
                        "init_command": "PRAGMA journal_mode=WAL;",
                    },
                },
            }
        )[ALIAS]
        try:
            for app in ("contenttypes", "auth", "django_mcp"):  # what django_mcp needs, all the way
                call_command("migrate", app, database=ALIAS, verbosity=0)
            with override_settings(DATABASE_ROUTERS=[f"{__name__}.TasksElsewhere"]):
                yield ALIAS
        finally:
            loop_sqlite._drop(ALIAS)
            if hasattr(connections._connections, ALIAS):
                connections[ALIAS].close()
                delattr(connections._connections, ALIAS)
            del connections.settings[ALIAS]


def _fields(**overrides: Any) -> dict[str, Any]:
    return {
        "tool": "t", "owner": "o", "scope": "routed", "arguments": {}, "status_message": "Working",
        "ttl_ms": 60_000, "poll_interval_ms": 100, "max_tasks": 3, "max_tasks_per_owner": None,
        "node": "n", "lease_seconds": 30, **overrides,
    }  # fmt: skip


def _nothing_on_default() -> None:
    assert (Task.objects.using("default").count(), TaskQuota.objects.using("default").count()) == (0, 0)


@pytest.mark.parametrize("per_owner", [None, 2], ids=["server-cap", "server-and-owner-caps"])
def test_creation_counts_and_inserts_on_the_routed_database(tasks_elsewhere, per_owner):
    created = [operations.create(**_fields(max_tasks_per_owner=per_owner)) for _ in range(2)]
    with pytest.raises(errors.TaskLimitReached):
        operations.create(**_fields(max_tasks=2))  # the cap is read from the routed counter
    assert {t._state.db for t in created} == {ALIAS}
    assert Task.objects.using(ALIAS).count() == 2
    counts = dict(TaskQuota.objects.using(ALIAS).values_list("owner", "count"))
    assert counts == ({"": 2} if per_owner is None else {"": 2, "o": 2})
    _nothing_on_default()


def test_a_task_lives_its_whole_life_on_the_routed_database(tasks_elsewhere):
    task = operations.create(**_fields())
    parked = operations.park(task.id, {"q": {"method": "elicitation/create"}})
    assert parked is not None and parked.status == "input_required"
    updated, accepted = operations.answer(task.id, "o", {"q": {"action": "accept"}})
    assert accepted == ["q"] and updated is not None and updated.status == "working"
    assert operations.take_answers(task.id, ["q"]) == {"q": {"action": "accept"}}
    assert operations.request_cancel(task.id, "o") is not None
    assert operations.renew_leases([str(task.id)], 30)[0] == [str(task.id)]
    done = operations.finish(task.id, "cancelled", message="Cancelled")
    assert done is not None and done.status == "cancelled"
    assert operations.visible(str(task.id), "o") == done
    assert loop_sqlite.read_visible(str(task.id), "o") == done  # tasks/get's read on the event loop
    _nothing_on_default()


def test_sweeps_forget_and_recount_act_on_the_routed_database(tasks_elsewhere):
    expired = operations.create(**_fields(ttl_ms=1))
    kept = operations.create(**_fields())
    assert caps.sweep_expired(timezone.now() + timedelta(seconds=1)) == 1
    assert operations.forget(kept.id) == 1
    assert not Task.objects.using(ALIAS).filter(pk__in=[expired.id, kept.id]).exists()
    assert TaskQuota.objects.using(ALIAS).get(owner="").count == 0
    caps.recount()
    assert not TaskQuota.objects.using(ALIAS).exists()
    _nothing_on_default()


async def test_the_store_threads_use_the_routed_database(tasks_elsewhere):
    doors = task_store.TaskStore(threads=2)
    try:
        task = await doors.acreate(**_fields())
        assert await doors.avisible(str(task.id), "o") == task
        finished = await doors.afinish(task.id, "completed", result={"content": []})
        assert finished is not None and finished._state.db == ALIAS
    finally:
        doors.close()
    assert await Task.objects.using("default").acount() == 0
