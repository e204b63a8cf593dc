"""The tasks admin: read-only list and detail, and the cancel action (the tasks/cancel code path)."""

import asyncio

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import User

from django_mcp.models import Task
from django_mcp.tasks import runner as task_runner
from tests.test_tasks import create, get, wait_for

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
async def _stop_tasks():
    yield
    await task_runner.stop_all()


@pytest.fixture
async def admin_client(async_client):
    user = await sync_to_async(User.objects.create_superuser)("admin", "a@example.com", "pw")
    await async_client.aforce_login(user)
    return async_client


async def test_changelist_and_read_only_detail(admin_client):
    task_id = (await create(admin_client, "quick", {"text": "admin"}))["taskId"]
    await wait_for(admin_client, task_id, "completed")
    listing = await admin_client.get("/admin/django_mcp/task/?status__exact=completed")
    assert listing.status_code == 200
    assert task_id in listing.content.decode()
    detail = await admin_client.get(f"/admin/django_mcp/task/{task_id}/change/")
    assert detail.status_code == 200
    page = detail.content.decode()
    assert "task:admin" in page and "<pre>" in page
    assert 'name="_save"' not in page  # read-only
    assert (await admin_client.get("/admin/django_mcp/task/add/")).status_code == 403
    row = await Task.objects.aget(pk=task_id)
    searched = await admin_client.get("/admin/django_mcp/task/", {"q": row.owner})
    assert task_id in searched.content.decode()


async def test_cancel_action_cancels_a_running_task(admin_client):
    running = (await create(admin_client, "slow", {"seconds": 30}))["taskId"]
    finished = (await create(admin_client, "quick"))["taskId"]
    await wait_for(admin_client, finished, "completed")
    response = await admin_client.post(
        "/admin/django_mcp/task/",
        {"action": "cancel_selected", "_selected_action": [running, finished]},
        follow=True,
    )
    assert response.status_code == 200
    page = response.content.decode()
    assert "Requested cancellation of 1 task(s)." in page
    assert "1 task(s) had already finished." in page
    assert (await wait_for(admin_client, running, "cancelled"))["status"] == "cancelled"
    assert (await get(admin_client, finished))["result"]["status"] == "completed"


async def test_cancel_action_flags_a_task_of_another_process(admin_client):
    """No runner here: the flag in the database is what the owning process picks up."""
    task = await Task.objects.acreate(tool="slow", owner="nobody", poll_interval_ms=100, node="elsewhere")
    await admin_client.post("/admin/django_mcp/task/", {"action": "cancel_selected", "_selected_action": [task.pk]})
    await task.arefresh_from_db()
    assert task.cancel_requested is True
    assert task.status == "working"
    await asyncio.sleep(0)


async def test_view_only_staff_cannot_cancel(async_client):
    from django.contrib.auth.models import Permission

    user = await sync_to_async(User.objects.create_user)("viewer", "v@example.com", "pw", is_staff=True)
    view = await Permission.objects.aget(codename="view_task")
    await sync_to_async(user.user_permissions.add)(view)
    await async_client.aforce_login(user)
    task = await Task.objects.acreate(tool="slow", owner="x", poll_interval_ms=100)
    listing = await async_client.get("/admin/django_mcp/task/")
    assert listing.status_code == 200
    assert "cancel_selected" not in listing.content.decode()
    await async_client.post("/admin/django_mcp/task/", {"action": "cancel_selected", "_selected_action": [task.pk]})
    await task.arefresh_from_db()
    assert task.cancel_requested is False
