"""OpenTelemetry (the ``otel`` extra): a server span per MCP request and the ``mcp.server.operation.duration``
histogram, named and attributed as OpenTelemetry's MCP semantic conventions say.

The client's trace context comes from ``params._meta`` (``traceparent``, ``tracestate``, ``baggage``, as
SEP-414 and the conventions say), else from the HTTP headers. Without ``opentelemetry-api``, or while no
tracer or meter provider is configured, nothing is built: one check per request.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from functools import cache
from typing import Any, TypeVar

from ..protocol.errors import McpJsonRpcError
from ..version import __version__
from .listen import open_listen_streams
from .request import McpRequest

T = TypeVar("T")
_TARGETS = {"tools/call": ("name", "gen_ai.tool.name"), "prompts/get": ("name", "gen_ai.prompt.name")}
_RESOURCE_METHODS = {"resources/read", "resources/subscribe", "resources/unsubscribe"}


@cache
def _otel() -> Any:
    try:
        # Here: the otel extra is optional.
        from opentelemetry import metrics, propagate, trace
    except ImportError:
        return None
    return trace, metrics, propagate


def active() -> bool:
    """Whether a tracer or meter provider is configured (the API's defaults are proxies until one is)."""
    otel = _otel()
    if otel is None:
        return False
    trace, metrics, _ = otel
    return type(trace.get_tracer_provider()).__name__ != "ProxyTracerProvider" or (
        type(metrics.get_meter_provider()).__name__ != "_ProxyMeterProvider"
    )


Observation = tuple[float, Mapping[str, str]]
_gauges: list[tuple[str, str, Callable[[], Iterable[Observation]]]] = []  # process-wide: declared at import


def gauge(name: str, description: str, observe: Callable[[], Iterable[Observation]]) -> None:
    """Declare an observable gauge (before the first atraced request): ``observe()`` yields (value, attributes),
    called by the metric reader's thread at each collection."""
    _gauges.append((name, description, observe))


@cache
def _instruments() -> tuple[Any, Any]:
    trace, metrics, _ = _otel()
    return instruments(trace.get_tracer("django_mcp", __version__), metrics.get_meter("django_mcp", __version__))


def instruments(tracer: Any, meter: Any) -> tuple[Any, Any]:
    """The tracer and the duration histogram; the declared gauges are created on ``meter`` too."""
    # Here: the otel extra is optional.
    from opentelemetry.metrics import Observation as Observed

    for name, description, observe in _gauges:

        def callback(options: Any, observe: Callable[[], Iterable[Observation]] = observe) -> list[Any]:
            return [Observed(value, dict(attrs)) for value, attrs in observe()]

        meter.create_observable_gauge(name, callbacks=[callback], description=description)
    duration = meter.create_histogram(
        "mcp.server.operation.duration", unit="s", description="MCP request duration as observed on the receiver"
    )
    return tracer, duration


def _open_streams() -> Iterable[Observation]:
    yield float(open_listen_streams()), {}


gauge("django_mcp.listen.streams", "Listen streams this process holds open", _open_streams)


def remote_context(meta: Any, headers: Mapping[str, str]) -> Any:
    """The client's trace context: ``params._meta`` first (SEP-414), the HTTP headers as a fallback."""
    _, _, propagate = _otel()
    carrier = meta if isinstance(meta, Mapping) and "traceparent" in meta else headers
    if not any(field in carrier for field in propagate.get_global_textmap().fields):
        # Here: the otel extra is optional.
        from opentelemetry.context import Context

        return Context()  # what extracting nothing gives: no parent (most requests carry no trace context)
    return propagate.extract({k: v for k, v in carrier.items() if isinstance(v, str)})


Known = Callable[[str, str], bool]
"""Whether a tool (``"tools/call"``) or prompt (``"prompts/get"``) of that name is served."""


def attributes(request: McpRequest, known: Known | None = None) -> tuple[str, dict[str, Any]]:
    """The span's name and attributes for ``request``. A tool or prompt name becomes the span's target only
    when ``known`` says it is served: a caller's made-up names would make names and series without end."""
    method = request.method
    attrs: dict[str, Any] = {"mcp.method.name": method, "mcp.protocol.version": request.protocol_version}
    name = method
    target = _TARGETS.get(method)
    value = request.params.get(target[0]) if target is not None else None
    if target is not None and isinstance(value, str) and (known is None or known(method, value)):
        attrs[target[1]] = request.params[target[0]]
        name = f"{method} {request.params[target[0]]}"
        if method == "tools/call":
            attrs["gen_ai.operation.name"] = "execute_tool"
    if method in _RESOURCE_METHODS and isinstance(request.params.get("uri"), str):
        attrs["mcp.resource.uri"] = request.params["uri"]
    if request.id is not None:
        attrs["jsonrpc.request.id"] = str(request.id)
    session = request.headers.get("mcp-session-id")
    if session:
        attrs["mcp.session.id"] = hashlib.sha256(session.encode()).hexdigest()[:32]  # never the id itself
    attrs["network.transport"] = "tcp"
    attrs["network.protocol.name"] = "http"
    return name, attrs


async def atraced(request: McpRequest, serve: Callable[[], Awaitable[T]], known: Known | None = None) -> T:
    """``serve()`` inside the request's server span, its duration recorded."""
    if not active():
        return await serve()
    trace = _otel()[0]
    tracer, duration = _instruments()
    name, attrs = attributes(request, known)
    parent = remote_context(request.params.get("_meta"), request.headers)
    ambient = trace.get_current_span().get_span_context()  # e.g. an HTTP server span: linked, not a parent
    links = [trace.Link(ambient)] if ambient.is_valid else []
    started = time.perf_counter()
    with tracer.start_as_current_span(
        name, context=parent, kind=trace.SpanKind.SERVER, attributes=attrs, links=links, record_exception=False
    ) as span:
        try:
            result = await serve()
        except McpJsonRpcError as exc:
            _failed(span, trace, attrs, str(exc.code), exc.message)
            raise
        except Exception as exc:
            _failed(span, trace, attrs, type(exc).__qualname__, str(exc))
            raise
        else:
            if isinstance(result, dict) and result.get("isError") is True:
                _failed(span, trace, attrs, "tool_error", None)
            return result
        finally:
            duration.record(time.perf_counter() - started, {k: v for k, v in attrs.items() if k in _METRIC_KEYS})


_METRIC_KEYS = {
    "mcp.method.name",
    "mcp.protocol.version",
    "gen_ai.tool.name",
    "gen_ai.prompt.name",
    "error.type",
    "rpc.response.status_code",
    "network.transport",
    "network.protocol.name",
}


def _failed(span: Any, trace: Any, attrs: dict[str, Any], error_type: str, message: str | None) -> None:
    attrs["error.type"] = error_type
    span.set_attribute("error.type", error_type)
    if error_type.lstrip("-").isdigit():
        attrs["rpc.response.status_code"] = error_type
        span.set_attribute("rpc.response.status_code", error_type)
    span.set_status(trace.Status(trace.StatusCode.ERROR, message))


def current_traceparent() -> str:
    """The W3C traceparent of the current span (stored with a task, for a worker's link), or ""."""
    if not active():
        return ""
    _, _, propagate = _otel()
    carrier: dict[str, str] = {}
    propagate.inject(carrier)
    return carrier.get("traceparent", "")[:64]


def link_to(traceparent: str) -> Any:
    """A link to the span a stored traceparent names, or None."""
    if not traceparent or not active():
        return None
    trace, _, propagate = _otel()
    context = trace.get_current_span(propagate.extract({"traceparent": traceparent})).get_span_context()
    return trace.Link(context) if context.is_valid else None


def notified(method: str, params: Mapping[str, Any], headers: Mapping[str, str], version: str) -> None:
    """A notification's span: it has no answer, so the span ends as it is received."""
    if not active():
        return
    trace = _otel()[0]
    tracer, _ = _instruments()
    attrs = {"mcp.method.name": method, "mcp.protocol.version": version, "network.transport": "tcp"}
    session = headers.get("mcp-session-id")
    if session:
        attrs["mcp.session.id"] = hashlib.sha256(session.encode()).hexdigest()[:32]
    parent = remote_context(params.get("_meta"), headers)
    tracer.start_span(method, context=parent, kind=trace.SpanKind.SERVER, attributes=attrs).end()


def creator_link() -> Any:
    """A link to the current span (the ``tools/call`` creating a task), or None: its task's span links it."""
    if not active():
        return None
    trace = _otel()[0]
    context = trace.get_current_span().get_span_context()
    return trace.Link(context) if context.is_valid else None


async def atraced_task(
    tool: str, task_id: str, link: Any, run: Callable[[Any], Awaitable[T]], on_span: Callable[[Any], None]
) -> T:
    """``run(span)``: a task's body inside a span of its own (``task {tool}``), linked to the request that
    created it; ``on_span`` gets the span (for the task's events: inputs answered, cancelled)."""
    if not active():
        return await run(None)
    trace = _otel()[0]
    tracer, _ = _instruments()
    attrs = {"gen_ai.tool.name": tool, "gen_ai.operation.name": "execute_tool", "mcp.task.id": task_id}
    with tracer.start_as_current_span(
        f"task {tool}",
        context=trace.set_span_in_context(trace.INVALID_SPAN),
        kind=trace.SpanKind.INTERNAL,
        attributes=attrs,
        links=[link] if link is not None else [],
        record_exception=False,
    ) as span:
        on_span(span)
        try:
            result = await run(span)
        except McpJsonRpcError as exc:
            _failed(span, trace, {}, str(exc.code), exc.message)
            raise
        except BaseException as exc:
            if not isinstance(exc, Exception):  # cancelled
                span.add_event("cancelled")
            else:
                _failed(span, trace, {}, type(exc).__qualname__, str(exc))
            raise
        return result
