"""A project that forgot ``manage.py migrate``: every task path answers a JSON-RPC error naming the fix."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from django.core.checks import run_checks
from django.db import connection
from django.db.migrations.recorder import MigrationRecorder

from django_mcp.models import Task
from django_mcp.tasks.models import TaskQuota
from tests.task_calls import CLIENT
from tests.wire import post, request_body

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def unmigrated() -> Iterator[None]:
    """The django_mcp tables dropped for one test, then made again."""
    with connection.schema_editor() as editor:
        editor.delete_model(TaskQuota)
        editor.delete_model(Task)
    try:
        yield
    finally:
        with connection.schema_editor() as editor:
            editor.create_model(Task)
            editor.create_model(TaskQuota)


async def call(client, method, params):
    response = await post(client, request_body(method, params, capabilities=CLIENT), path="/mcp-tasks/")
    return response.status_code, json.loads(response.content)


@pytest.mark.parametrize(
    "method, params",
    [
        ("tools/call", {"name": "declared", "arguments": {"text": "x"}}),
        ("tasks/get", {"taskId": "0b8f7b8e-6f7b-4f7b-8f7b-8f7b8f7b8f7b"}),
        ("tasks/update", {"taskId": "0b8f7b8e-6f7b-4f7b-8f7b-8f7b8f7b8f7b", "inputResponses": {}}),
        ("tasks/cancel", {"taskId": "0b8f7b8e-6f7b-4f7b-8f7b-8f7b8f7b8f7b"}),
    ],
)
async def test_a_missing_table_names_migrate(async_client, unmigrated, method, params):
    status, body = await call(async_client, method, params)
    assert status == 500 and "error" in body, body
    assert "manage.py migrate" in body["error"]["message"]
    assert "try again" not in body["error"]["message"]


# -- the deployment check -------------------------------------------------------------------


@pytest.fixture
def last_migration_unrecorded() -> Iterator[str]:
    recorder = MigrationRecorder(connection)
    last = max(name for app, name in recorder.applied_migrations() if app == "django_mcp")
    recorder.record_unapplied("django_mcp", last)
    try:
        yield last
    finally:
        recorder.record_applied("django_mcp", last)


def test_e009_names_the_unapplied_migrations_on_check_deploy_database(last_migration_unrecorded):
    [error] = [m for m in run_checks(include_deployment_checks=True, databases=["default"]) if m.id.endswith("E009")]
    assert error.id == "django_mcp.E009" and last_migration_unrecorded in error.msg
    assert "manage.py migrate" in error.hint


def test_e009_runs_only_as_a_deployment_check_on_a_database(last_migration_unrecorded):
    # migrate runs the database checks before it migrates: E009 must not stop it there.
    for kwargs in ({"databases": ["default"]}, {"include_deployment_checks": True}):
        assert not [m for m in run_checks(**kwargs) if m.id == "django_mcp.E009"]


def test_e009_is_silent_when_migrated():
    assert not [
        m for m in run_checks(include_deployment_checks=True, databases=["default"]) if m.id == "django_mcp.E009"
    ]


@pytest.fixture
def fleet_backend_unmigrated() -> Iterator[str]:
    """The last migration of django_tasks_db (the "fleet" backend's app) recorded as unapplied."""
    recorder = MigrationRecorder(connection)
    label = "django_tasks_database"
    last = max(name for app, name in recorder.applied_migrations() if app == label)
    recorder.record_unapplied(label, last)
    try:
        yield last
    finally:
        recorder.record_applied(label, last)


def test_e009_names_the_fleet_backends_unapplied_migrations(fleet_backend_unmigrated):
    [error] = [m for m in run_checks(include_deployment_checks=True, databases=["default"]) if m.id.endswith("E009")]
    assert "django_tasks_database" in error.msg and fleet_backend_unmigrated in error.msg
    assert "worker fleet" in error.msg
