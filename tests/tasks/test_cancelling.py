"""acancel_task and cancel_task, the public way to cancel from project code: the path tasks/cancel takes."""

import pytest
from asgiref.sync import sync_to_async

from django_mcp.models import Task
from django_mcp.tasks import acancel_task, cancel_task
from django_mcp.testing import McpClient

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.parametrize("sync", [False, True], ids=["acancel_task", "cancel_task"])
async def test_project_code_cancels_a_running_task(async_client, sync):
    mcp = McpClient("/mcp-tasks", client=async_client)
    task_id = (await mcp.astart_task("slow", {"seconds": 30}))["taskId"]
    task = await Task.objects.aget(pk=task_id)
    if sync:
        await sync_to_async(cancel_task)(task)
    else:
        await acancel_task(task)
    assert (await mcp.await_task(task_id, "cancelled"))["status"] == "cancelled"


async def test_a_finished_task_is_left_as_it_is(async_client):
    mcp = McpClient("/mcp-tasks", client=async_client)
    task_id = (await mcp.astart_task("quick", {"text": "x"}))["taskId"]
    await mcp.await_task(task_id, "completed")
    task = await Task.objects.aget(pk=task_id)
    await acancel_task(task)
    await task.arefresh_from_db()
    assert task.status == "completed" and task.cancel_requested is False
