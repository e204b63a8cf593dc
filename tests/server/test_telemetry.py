"""OpenTelemetry: a server span per MCP request (named and attributed as the MCP semantic conventions say),
the client's context from params._meta (else the HTTP headers), errors, the duration histogram, and a
task's own span linked to the tools/call that created it, with its cancellation as events."""

from __future__ import annotations

import asyncio

import pytest
from asgiref.sync import sync_to_async
from opentelemetry import trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from django_mcp.server import telemetry
from tests.task_calls import rpc, wait_for
from tests.wire import post, request_body

pytestmark = pytest.mark.django_db(transaction=True)

CLIENT_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
TRACEPARENT = f"00-{CLIENT_TRACE}-00f067aa0ba902b7-01"


@pytest.fixture
def otel(monkeypatch):
    """A tracer and a meter of our own (the global providers can be set once per process)."""
    spans, reader = InMemorySpanExporter(), InMemoryMetricReader()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    meter_provider = MeterProvider(metric_readers=[reader])
    made = telemetry.instruments(tracer_provider.get_tracer("django_mcp"), meter_provider.get_meter("django_mcp"))
    monkeypatch.setattr(telemetry, "active", lambda: True)
    monkeypatch.setattr(telemetry, "_instruments", lambda: made)
    return spans, reader


def metrics(reader):
    return [m for rm in reader.get_metrics_data().resource_metrics for sm in rm.scope_metrics for m in sm.metrics]


def named(spans, name):
    found = [s for s in spans.get_finished_spans() if s.name == name]
    assert found, f"no span {name!r} among {[s.name for s in spans.get_finished_spans()]}"
    return found[-1]


async def test_a_tools_call_is_a_server_span_under_the_clients_context(async_client, otel):
    spans, reader = otel
    body = await rpc(async_client, "tools/call", {"name": "plain"}, id=7, traceparent=TRACEPARENT)
    assert "result" in body
    span = named(spans, "tools/call plain")
    assert span.kind == trace.SpanKind.SERVER
    assert format(span.context.trace_id, "032x") == CLIENT_TRACE  # the client's span is the parent
    assert format(span.parent.span_id, "016x") == "00f067aa0ba902b7"
    attrs = dict(span.attributes)
    assert attrs["mcp.method.name"] == "tools/call" and attrs["gen_ai.tool.name"] == "plain"
    assert attrs["gen_ai.operation.name"] == "execute_tool" and attrs["mcp.protocol.version"] == "2026-07-28"
    assert attrs["jsonrpc.request.id"] == "7" and "error.type" not in attrs
    [metric] = [m for m in metrics(reader) if m.name == "mcp.server.operation.duration"]
    point = metric.data.data_points[0]
    assert point.count == 1 and point.attributes["gen_ai.tool.name"] == "plain"


async def test_the_http_headers_are_the_fallback_context(async_client, otel):
    spans, _ = otel
    await rpc(async_client, "tools/list", headers={"traceparent": TRACEPARENT})
    span = named(spans, "tools/list")
    assert format(span.context.trace_id, "032x") == CLIENT_TRACE


@pytest.mark.parametrize("headers", [{}, {"tracestate": "vendor=1"}], ids=["nothing", "tracestate-alone"])
async def test_without_a_trace_context_the_span_is_a_root_and_an_ambient_span_only_a_link(async_client, otel, headers):
    spans, _ = otel
    ambient = TracerProvider().get_tracer("an HTTP server's instrumentation")
    with ambient.start_as_current_span("POST /mcp") as outer:
        await rpc(async_client, "tools/list", headers=headers)
    span = named(spans, "tools/list")
    assert span.parent is None
    assert [link.context.span_id for link in span.links] == [outer.get_span_context().span_id]


async def test_errors_set_error_type_and_the_status(async_client, otel):
    spans, _ = otel
    await rpc(async_client, "tools/call", {"name": "no_such_tool"})
    refused = named(spans, "tools/call")  # a name nobody serves is no target: it would name series without end
    assert "gen_ai.tool.name" not in refused.attributes
    assert refused.attributes["error.type"] == "-32602" and refused.attributes["rpc.response.status_code"] == "-32602"
    assert refused.status.status_code == trace.StatusCode.ERROR and "Unknown tool" in refused.status.description
    await rpc(async_client, "tools/call", {"name": "task_boom"}, caps={})  # an isError result, in the request
    failed = named(spans, "tools/call task_boom")
    assert failed.attributes["error.type"] == "tool_error" and failed.status.status_code == trace.StatusCode.ERROR


async def test_a_handlers_unexpected_failure_is_an_error_span_of_its_type(async_client, otel, monkeypatch):
    from django_mcp.server import dispatch

    async def broken(*args, **kwargs):
        raise RuntimeError("a bug")

    listed = dispatch.CORE_METHODS["tools/list"]
    monkeypatch.setitem(dispatch.CORE_METHODS, "tools/list", dispatch.CoreMethod(broken, listed.params_model, "tools"))
    assert (await rpc(async_client, "tools/list", {}))["error"]["code"] == -32603
    span = named(otel[0], "tools/list")
    assert span.attributes["error.type"] == "RuntimeError" and span.status.status_code == trace.StatusCode.ERROR


async def test_a_resource_read_names_its_uri(async_client, otel):
    body = await rpc(async_client, "resources/read", {"uri": "test://readme"}, path="/mcp-content/")
    assert "result" in body, body
    assert named(otel[0], "resources/read").attributes["mcp.resource.uri"] == "test://readme"


async def test_a_task_runs_in_a_span_linked_to_its_creation_and_cancelling_is_an_event(async_client, otel):
    spans, _ = otel
    handle = (await rpc(async_client, "tools/call", {"name": "slow", "arguments": {"seconds": 30}}))["result"]
    for _ in range(100):
        if (await rpc(async_client, "tasks/get", {"taskId": handle["taskId"]}))["result"]["status"] == "working":
            break
    await rpc(async_client, "tasks/cancel", {"taskId": handle["taskId"]})
    await wait_for(async_client, handle["taskId"], "cancelled")
    for _ in range(100):
        if any(s.name == "task slow" for s in spans.get_finished_spans()):
            break
        await asyncio.sleep(0.02)
    creation, run = named(spans, "tools/call slow"), named(spans, "task slow")
    assert [link.context.span_id for link in run.links] == [creation.context.span_id]
    assert run.context.trace_id != creation.context.trace_id  # a trace of its own, linked
    assert run.attributes["mcp.task.id"] == handle["taskId"]
    assert [event.name for event in run.events] == ["tasks/cancel", "cancelled"]


async def test_the_handshake_era_records_a_hashed_session_id(async_client, otel):
    from tests.session_calls import initialize
    from tests.session_calls import rpc as session_rpc

    spans, _ = otel
    session, _ = await initialize(async_client, path="/mcp-tasks/")
    await session_rpc(async_client, session, "tools/call", {"name": "plain"}, path="/mcp-tasks/")
    await session_rpc(async_client, session, "ping", path="/mcp-tasks/")
    span = named(spans, "tools/call plain")
    assert span.attributes["mcp.protocol.version"] == "2025-11-25"
    assert len(span.attributes["mcp.session.id"]) == 32 and span.attributes["mcp.session.id"] != session
    assert named(spans, "initialize").attributes["mcp.method.name"] == "initialize"
    assert named(spans, "ping").attributes["mcp.session.id"] == span.attributes["mcp.session.id"]
    initialized = named(spans, "notifications/initialized")  # a notification: a span of its own, no answer
    assert initialized.kind == trace.SpanKind.SERVER


def test_without_a_provider_nothing_is_traced():
    assert telemetry.active() is False  # the API's proxies: no SDK configured in this process


async def test_gauges_count_tasks_by_status_queued_fleet_tasks_and_listen_streams(async_client, otel):
    from tests.fleet_calls import create as fleet_create

    _, reader = otel
    handle = (await rpc(async_client, "tools/call", {"name": "slow", "arguments": {"seconds": 30}}))["result"]
    await fleet_create(async_client, "sleeper", {"seconds": 0.05})  # queued: no worker claimed it
    found = await sync_to_async(metrics)(reader)  # the gauges query the database: off the loop, as a reader does
    points = {m.name: m.data.data_points for m in found}
    tasks = {(p.attributes["mcp.server"], p.attributes["mcp.task.status"]): p.value for p in points["django_mcp.tasks"]}
    assert tasks[("mcp_tasks", "working")] == 1 and tasks[("mcp_fleet", "working")] == 1
    assert [(p.attributes["mcp.server"], p.value) for p in points["django_mcp.fleet.queued"]] == [("mcp_fleet", 1)]
    assert [p.value for p in points["django_mcp.listen.streams"]] == [0]
    await rpc(async_client, "tasks/cancel", {"taskId": handle["taskId"]})


async def test_a_fleet_workers_run_links_to_the_request_that_created_the_task(async_client, otel):
    from django_mcp.tasks import fleet
    from tests.fleet_calls import NAMESPACE
    from tests.fleet_calls import create as fleet_create

    spans, _ = otel
    handle = await fleet_create(async_client, "sleeper", {"seconds": 0.01})
    creation = named(spans, "tools/call sleeper")
    assert await fleet.arun(handle["taskId"], NAMESPACE) == "completed"  # no span around it: as on a worker
    run = named(spans, "task sleeper")
    assert [link.context.span_id for link in run.links] == [creation.context.span_id]


async def test_a_notification_is_a_span_of_its_own(async_client, otel):

    spans, _ = otel
    body = request_body("notifications/cancelled", {"requestId": 9}, traceparent=TRACEPARENT)
    del body["id"]
    assert (await post(async_client, body, path="/mcp-tasks/")).status_code == 202
    span = named(spans, "notifications/cancelled")
    assert format(span.context.trace_id, "032x") == CLIENT_TRACE and "jsonrpc.request.id" not in span.attributes
