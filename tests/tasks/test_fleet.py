"""The worker fleet: declarative task bodies enqueued on a Django Tasks backend and run by a worker.

No processes here: the web side answers through the test client, and the worker's entry point
(:func:`django_mcp.tasks.fleet.arun`) is called on the test's own loop.
"""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.conf import settings
from django.test import override_settings
from django.utils import timezone

from django_mcp.models import Task
from django_mcp.tasks import McpTasks, cancel_task, fleet
from django_mcp.tasks.checks import check_fleet
from django_mcp.tasks.models import TaskQuota
from django_mcp.tasks.store import operations
from tests.fleet_calls import CLIENT, NAMESPACE, PATH, TENANT, create, rpc
from tests.fleetapp.servers import fleet_server, fleet_tools
from tests.publishapp.models import Book
from tests.task_servers import stop_all_tasks
from tests.wire import post, request_body

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
async def _fleet(tmp_path, monkeypatch):
    monkeypatch.setenv("FLEET_MARKS", str(tmp_path))
    yield
    await stop_all_tasks()


async def get(client, task_id) -> dict[str, Any]:
    return (await rpc(client, "tasks/get", {"taskId": task_id}))["result"]


async def row(task_id) -> Task:
    return await Task.objects.aget(pk=task_id)


def plugin() -> McpTasks:
    return next(p for p in fleet_server.extension_plugins if isinstance(p, McpTasks))


async def wait_mark(tmp_path, task_id, what, timeout=5.0):
    deadline = asyncio.get_running_loop().time() + timeout
    while not (tmp_path / f"{task_id}.{what}").exists():
        assert asyncio.get_running_loop().time() < deadline, f"no {what} mark"
        await asyncio.sleep(0.01)


# -- the web side: a queued row and a job --------------------------------------------------------


async def test_a_task_tool_call_commits_a_queued_row_and_enqueues_a_job(async_client):
    from django_tasks_db.models import DBTaskResult

    result = await create(async_client, "sleeper", {"seconds": 1})
    assert result["status"] == "working"
    assert result["statusMessage"] == "Queued for a worker"
    task = await row(result["taskId"])
    assert (task.node, task.lease_expires_at, task.backend) == ("", None, "fleet")
    assert task.request_meta["io.modelcontextprotocol/clientCapabilities"] == CLIENT
    assert "io.modelcontextprotocol/protocolVersion" in task.request_meta
    job = await DBTaskResult.objects.aget(pk=task.job_id)
    assert (job.task_path, job.queue_name, job.backend_name) == ("django_mcp.tasks.fleet.run_mcp_task", "mcp", "fleet")
    assert job.args_kwargs["args"] == [str(task.id), NAMESPACE]
    # Nobody runs it: polling shows it queued, the lease reaper leaves it alone.
    await plugin().runner.amaintain_once(1.0)
    assert (await get(async_client, result["taskId"]))["statusMessage"] == "Queued for a worker"


@pytest.mark.parametrize("bad", ["\x00", "\ud800"])
async def test_client_info_a_worker_could_not_be_given_is_refused_as_params(async_client, bad):
    # A fleet task stores the request's _meta for its worker: what jsonb cannot hold is refused up front.
    capabilities = {**CLIENT, "experimental": {f"x{bad}": {}}}
    body = request_body("tools/call", {"name": "whoami", "arguments": {}}, capabilities=capabilities)
    response = await post(async_client, body, path=PATH, headers=TENANT)
    assert response.status_code == 400
    assert json.loads(response.content)["error"]["code"] == -32602
    assert "_meta" in json.loads(response.content)["error"]["message"]
    assert await Task.objects.acount() == 0


async def test_the_job_is_found_by_its_path():
    from django.utils.module_loading import import_string

    job = import_string("django_mcp.tasks.fleet.run_mcp_task")
    assert job is fleet.get_run_mcp_task()
    assert job.module_path == "django_mcp.tasks.fleet.run_mcp_task"


async def test_an_enqueue_failure_answers_503_and_leaves_no_row(async_client, monkeypatch):
    from django_tasks_db.backend import DatabaseBackend

    def refuse(*args, **kwargs):
        raise ConnectionError("backend down")

    async def arefuse(*args, **kwargs):
        refuse()

    monkeypatch.setattr(DatabaseBackend, "enqueue", refuse)
    monkeypatch.setattr(DatabaseBackend, "aenqueue", arefuse)
    body = request_body("tools/call", {"name": "sleeper", "arguments": {}}, capabilities=CLIENT)
    response = await post(async_client, body, path=PATH, headers=TENANT)
    assert response.status_code == 503
    error = json.loads(response.content)["error"]
    assert error["code"] == -32603
    assert error["data"] == {"taskBackend": "fleet"}
    assert "backend down" not in error["message"]
    assert await Task.objects.acount() == 0
    assert [q.count async for q in TaskQuota.objects.filter(scope=NAMESPACE)] in ([], [0], [0, 0])


# -- the worker side ---------------------------------------------------------------------------


async def test_a_worker_claims_runs_and_completes_the_task(async_client, tmp_path):
    result = await create(async_client, "sleeper", {"seconds": 0.05})
    outcome = await fleet.arun(result["taskId"], NAMESPACE)
    assert outcome == "completed"
    task = await get(async_client, result["taskId"])
    assert task["status"] == "completed"
    assert (tmp_path / f"{result['taskId']}.started").exists()
    assert "slept" in json.dumps((await row(result["taskId"])).result)
    # A second delivery of the same job finds it claimed: the body does not run twice.
    assert await fleet.arun(result["taskId"], NAMESPACE) == "not run: completed"


async def test_a_body_over_its_time_limit_fails_on_the_worker(async_client):
    result = await create(async_client, "bounded")
    assert await fleet.arun(result["taskId"], NAMESPACE) == "failed"
    task = await get(async_client, result["taskId"])
    assert task["status"] == "failed" and task["error"]["message"] == "Task timed out: it ran longer than 0.2 s"


async def test_the_rebuilt_request_carries_user_capabilities_and_version(async_client, django_user_model):
    user = await django_user_model.objects.acreate(username="ada")
    await async_client.aforce_login(user)
    result = await create(async_client, "whoami")
    assert await fleet.arun(result["taskId"], NAMESPACE) == "completed"
    task = await row(result["taskId"])
    seen = json.loads(task.result["content"][0]["text"])
    assert seen["user"] == "ada"
    assert seen["capabilities"] == ["elicitation", "extensions"]
    assert seen["protocolVersion"] == task.request_meta["io.modelcontextprotocol/protocolVersion"]
    request = fleet._rebuild_request(await sync_to_async(_load_user)(task.id), NAMESPACE)
    assert request.user.username == "ada"
    assert request.auth == user
    assert request.params == {"name": "whoami", "arguments": {}}
    assert request.client_capabilities == CLIENT
    assert dict(request.headers) == {}


async def test_published_operations_run_on_the_worker_as_the_caller(async_client, django_user_model):
    from django.contrib.auth.models import Permission

    user = await django_user_model.objects.acreate(username="ada")
    await user.user_permissions.aadd(
        await Permission.objects.aget(codename="view_book", content_type__app_label="publishapp")
    )
    await async_client.aforce_login(user)
    await Book.objects.acreate(title="Dune", year=1965)
    whoami = await create(async_client, "fleet_whoami")
    titles = await create(async_client, "fleet_titles", {"filter": {"title__icontains": "dun"}})
    assert await fleet.arun(whoami["taskId"], NAMESPACE) == "completed"
    assert await fleet.arun(titles["taskId"], NAMESPACE) == "completed"
    assert json.loads((await row(whoami["taskId"])).result["content"][0]["text"]) == {"username": "ada"}
    assert (await row(titles["taskId"])).result["structuredContent"]["results"] == [{"title": "Dune"}]


def _load_user(task_id):
    return Task.objects.select_related("user").get(pk=task_id)


async def test_input_requests_park_the_task_on_the_worker(async_client):
    result = await create(async_client, "heavy", {"text": "hi"})
    worker = asyncio.ensure_future(fleet.arun(result["taskId"], NAMESPACE))
    deadline = asyncio.get_running_loop().time() + 5
    while (task := await get(async_client, result["taskId"]))["status"] != "input_required":
        assert asyncio.get_running_loop().time() < deadline, task
        await asyncio.sleep(0.02)
    key = next(iter(task["inputRequests"]))
    answer = {key: {"action": "accept", "content": {"ok": True}}}
    await rpc(async_client, "tasks/update", {"taskId": result["taskId"], "inputResponses": answer}, status=200)
    assert await asyncio.wait_for(worker, 10) == "completed"
    assert "answered=accept" in json.dumps((await row(result["taskId"])).result)


async def test_cancel_before_a_worker_claims_it_cancels_at_once_and_the_body_never_runs(async_client, tmp_path):
    result = await create(async_client, "sleeper", {"seconds": 30})
    await rpc(async_client, "tasks/cancel", {"taskId": result["taskId"]}, status=200)
    task = await get(async_client, result["taskId"])
    assert task["status"] == "cancelled"
    assert task["statusMessage"] == "Cancelled before it started"
    assert await fleet.arun(result["taskId"], NAMESPACE) == "not run: cancelled"
    assert not (tmp_path / f"{result['taskId']}.started").exists()


async def test_the_admin_cancel_of_a_queued_task_cancels_it_at_once(async_client, tmp_path):
    result = await create(async_client, "sleeper", {"seconds": 30})
    await sync_to_async(cancel_task)(await row(result["taskId"]))
    assert (await row(result["taskId"])).status == "cancelled"
    assert await fleet.arun(result["taskId"], NAMESPACE) == "not run: cancelled"
    assert not (tmp_path / f"{result['taskId']}.started").exists()


async def test_cancel_of_a_running_task_reaches_the_worker(async_client, tmp_path):
    result = await create(async_client, "sleeper", {"seconds": 30})
    worker = asyncio.ensure_future(fleet.arun(result["taskId"], NAMESPACE))
    await wait_mark(tmp_path, result["taskId"], "started")
    assert (await row(result["taskId"])).node == plugin().runner.node
    await rpc(async_client, "tasks/cancel", {"taskId": result["taskId"]}, status=200)
    assert await asyncio.wait_for(worker, 10) == "cancelled"
    await wait_mark(tmp_path, result["taskId"], "cancelled")


async def test_claim_is_a_compare_and_set(async_client):
    result = await create(async_client, "sleeper", {"seconds": 30})
    claim = sync_to_async(operations.claim)
    first = await claim(result["taskId"], "node-a", 5.0, "Running")
    assert first is not None and first.node == "node-a" and first.lease_expires_at is not None
    assert await claim(result["taskId"], "node-b", 5.0, "Running") is None
    assert await sync_to_async(operations.cancel_queued)(result["taskId"]) is None  # a worker has it
    other = await create(async_client, "sleeper", {"seconds": 30})
    assert await sync_to_async(operations.cancel_queued)(other["taskId"]) is not None
    assert await claim(other["taskId"], "node-a", 5.0, "Running") is None


async def test_a_worker_out_of_step_with_the_web_fails_the_task(async_client):
    result = await create(async_client, "sleeper", {"seconds": 1})
    await Task.objects.filter(pk=result["taskId"]).aupdate(tool="gone")
    assert await fleet.arun(result["taskId"], NAMESPACE) == "not started"
    task = await get(async_client, result["taskId"])
    assert task["status"] == "failed"
    assert task["statusMessage"] == "Task failed: the worker could not start it (LookupError)"
    other = await create(async_client, "sleeper", {"seconds": 1})
    await Task.objects.filter(pk=other["taskId"]).aupdate(arguments={"seconds": "long"})
    assert await fleet.arun(other["taskId"], NAMESPACE) == "not started"
    assert (await row(other["taskId"])).status == "failed"


async def test_a_worker_without_the_server_says_so():
    with pytest.raises(LookupError):
        await fleet.arun("00000000-0000-0000-0000-000000000000", "no_such_server")


# -- the queued timeout ------------------------------------------------------------------------


def _tasks_settings(**changes) -> dict[str, Any]:
    return {**settings.DJANGO_MCP, **changes}


async def test_a_task_no_worker_started_in_time_is_failed_by_the_web_maintenance(async_client):
    result = await create(async_client, "sleeper", {"seconds": 30})
    fresh = await create(async_client, "sleeper", {"seconds": 30})
    old = timezone.now() - timedelta(seconds=700)
    await Task.objects.filter(pk=result["taskId"]).aupdate(created_at=old)
    with override_settings(DJANGO_MCP=_tasks_settings(TASK_QUEUED_TIMEOUT_SECONDS=None)):
        await plugin().runner.amaintain_once(1.0)
    assert (await row(result["taskId"])).status == "working"
    await plugin().runner.amaintain_once(1.0)  # the default: 600 s
    task = await get(async_client, result["taskId"])
    assert task["status"] == "failed"
    assert task["statusMessage"] == (
        "No worker started the task within its queue timeout (600 s): is the fleet running?"
    )  # was "No worker started the task": which timeout, and what to look at
    assert (await row(fresh["taskId"])).status == "working"
    assert await fleet.arun(result["taskId"], NAMESPACE) == "not run: failed"


async def test_the_sweep_leaves_tasks_running_in_the_web_process_alone(async_client):
    await Task.objects.all().adelete()
    task = await sync_to_async(operations.create)(
        tool="x",
        arguments={},
        owner="o",
        scope="s",
        status_message="",
        ttl_ms=None,
        poll_interval_ms=1000,
        max_tasks=100,
        max_tasks_per_owner=None,
        node="",
        lease_seconds=None,
    )
    await Task.objects.filter(pk=task.pk).aupdate(created_at=timezone.now() - timedelta(days=1))
    assert await sync_to_async(operations.fail_stale_queued)(1.0, {"code": -1, "message": "m"}) == []


# -- checks and options --------------------------------------------------------------------------

REDIS_LAYER = {"default": {"BACKEND": "channels_redis.pubsub.RedisPubSubChannelLayer"}}
MEMORY_LAYER = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
DB = {"BACKEND": "django_tasks_db.DatabaseBackend", "QUEUES": ["mcp"]}


def ids(plugin_: McpTasks, tools=()) -> list[str]:
    return sorted(m.id for m in check_fleet(plugin_, list(tools)))


def tasks_plugin(**kwargs) -> McpTasks:
    p = McpTasks(**kwargs)
    p.namespace = "checked"
    return p


@override_settings(CHANNEL_LAYERS=REDIS_LAYER, DEBUG=False, TASKS={"fleet": DB})
def test_checks_clean_for_a_configured_fleet():
    assert ids(tasks_plugin(task_backend="fleet", task_queue="mcp")) == []
    assert ids(tasks_plugin()) == []  # no fleet: nothing to check
    assert ids(plugin(), list(fleet_tools)) == []


@override_settings(CHANNEL_LAYERS=REDIS_LAYER, DEBUG=False, TASKS={"fleet": DB})
def test_e008_a_backend_missing_from_tasks_or_a_queue_not_in_its_queues():
    assert ids(tasks_plugin(task_backend="nope", task_queue="mcp")) == ["django_mcp.E008"]
    assert ids(tasks_plugin(task_backend="fleet")) == ["django_mcp.E008"]  # queue "default" not in ["mcp"]
    (message,) = check_fleet(tasks_plugin(task_backend="fleet", task_queue="other"), [])
    assert "'other'" in message.msg and "QUEUES" in message.msg


@override_settings(CHANNEL_LAYERS=REDIS_LAYER, TASKS={"fleet": DB})
def test_e008_for_a_tool_naming_a_missing_backend():
    class FakeTool:
        name = "t"
        extension_options = {"task_backend": "elsewhere"}

    (message,) = check_fleet(tasks_plugin(), [FakeTool()])  # type: ignore[list-item]
    assert message.id == "django_mcp.E008" and "tool 't'" in message.msg


@pytest.mark.parametrize("backend", ["ImmediateBackend", "DummyBackend"])
def test_w009_immediate_or_dummy_outside_debug(backend):
    local = {"fleet": {"BACKEND": f"django_tasks.backends.{backend.lower()[:-7]}.{backend}", "QUEUES": []}}
    with override_settings(CHANNEL_LAYERS=REDIS_LAYER, DEBUG=False, TASKS=local):
        assert ids(tasks_plugin(task_backend="fleet")) == ["django_mcp.W009"]
    with override_settings(CHANNEL_LAYERS=REDIS_LAYER, DEBUG=True, TASKS=local):
        assert ids(tasks_plugin(task_backend="fleet")) == []


@override_settings(DEBUG=False, TASKS={"fleet": DB})
def test_w010_a_fleet_without_a_shared_channel_layer():
    with override_settings(CHANNEL_LAYERS=MEMORY_LAYER):
        assert ids(tasks_plugin(task_backend="fleet", task_queue="mcp")) == ["django_mcp.W010"]
    with override_settings(CHANNEL_LAYERS={}):
        assert "django_mcp.W010" in ids(tasks_plugin(task_backend="fleet", task_queue="mcp"))


@pytest.mark.parametrize("value", ["", 5, ["fleet"]])
def test_task_backend_options_are_validated(value):
    with pytest.raises(ValueError, match="task_backend"):
        McpTasks.tool_options["task_backend"](value)


@pytest.mark.parametrize("value", [None, "fleet"])
def test_task_backend_options_accepted(value):
    assert McpTasks.tool_options["task_backend"](value) is None  # no ValueError: accepted


async def test_the_enqueue_and_the_job_id_share_one_store_thread_and_connection(async_client, monkeypatch):
    # A request that held a connection for the enqueue while a store thread took another for the
    # job id starved a small pool: 8 concurrent calls on psycopg's pool of 4 all timed out (bench/fleet.py).
    import threading

    from django_tasks_db.backend import DatabaseBackend

    from django_mcp.tasks.store import operations

    threads: dict[str, int] = {}
    enqueue, set_job = DatabaseBackend.enqueue, operations.set_job

    def spy_enqueue(self, *args, **kwargs):
        threads["enqueue"] = threading.get_ident()
        return enqueue(self, *args, **kwargs)

    def spy_set_job(*args, **kwargs):
        threads["set_job"] = threading.get_ident()
        return set_job(*args, **kwargs)

    monkeypatch.setattr(DatabaseBackend, "enqueue", spy_enqueue)
    monkeypatch.setattr(operations, "set_job", spy_set_job)
    body = request_body("tools/call", {"name": "sleeper", "arguments": {}}, capabilities=CLIENT)
    response = await post(async_client, body, path=PATH, headers=TENANT)
    assert response.status_code == 200, response.content
    assert threads["enqueue"] == threads["set_job"] != threading.get_ident()
    task = await Task.objects.aget(pk=json.loads(response.content)["result"]["taskId"])
    assert task.job_id


def test_a_worker_finds_the_plugin_by_its_servers_namespace_and_refuses_an_unknown_one():
    plugin = fleet.find_plugin(NAMESPACE)
    assert isinstance(plugin, McpTasks) and plugin in fleet_server.extension_plugins
    assert plugin.tools is fleet_server.tools  # what install() was given: the worker runs the server's tools
    with pytest.raises(LookupError, match="No McpTasks on a server named 'no-such-server'"):
        fleet.find_plugin("no-such-server")


async def test_a_worker_waits_out_a_database_outage_before_claiming(async_client, monkeypatch):
    """RQ and Celery hand a job over once: a claim that met an outage left the task queued until its queue
    timeout (the chaos run found a Celery task stuck so after PostgreSQL was stopped 22 s)."""
    from django_mcp.tasks.store.errors import StillUnreachable

    result = await create(async_client, "sleeper", {"seconds": 0.05})
    store = fleet.find_plugin(NAMESPACE).store
    real, failures = store.aclaim, []

    async def down_twice(*args: Any, **kwargs: Any) -> Any:
        if len(failures) < 2:
            failures.append(1)
            raise StillUnreachable("The database was unreachable a moment ago")
        return await real(*args, **kwargs)

    monkeypatch.setattr(store, "aclaim", down_twice)
    assert await fleet.arun(result["taskId"], NAMESPACE) == "completed"
    assert len(failures) == 2
