"""OpenTelemetry for the live tests' server processes: every finished span as a JSON line in
``$DJANGO_MCP_TEST_OTEL_DIR/<pid>.jsonl`` (set up by tests/settings.py when the variable is set)."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult


class JsonLinesExporter(SpanExporter):
    def __init__(self, folder: str) -> None:
        self.path = Path(folder) / f"{os.getpid()}.jsonl"

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        with self.path.open("a") as out:
            for span in spans:
                out.write(json.dumps(as_dict(span)) + "\n")
        return SpanExportResult.SUCCESS


def as_dict(span: ReadableSpan) -> dict[str, Any]:
    return {
        "name": span.name,
        "trace_id": format(span.context.trace_id, "032x"),
        "span_id": format(span.context.span_id, "016x"),
        "parent_span_id": format(span.parent.span_id, "016x") if span.parent else None,
        "links": [format(link.context.span_id, "016x") for link in span.links],
        "attributes": dict(span.attributes or {}),
        "pid": os.getpid(),
    }


def setup(folder: str) -> None:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(JsonLinesExporter(folder)))
    trace.set_tracer_provider(provider)


def read(folder: Path) -> list[dict[str, Any]]:
    """Every span every process wrote."""
    return [json.loads(line) for path in sorted(folder.glob("*.jsonl")) for line in path.read_text().splitlines()]
