"""An OTLP/HTTP receiver on 127.0.0.1 for the deployed target: takes what its OpenTelemetry SDK exports, as
a collector beside the service would, and counts it.

    bench/.venvs/harness/bin/python bench/otlp_receiver.py --port PORT

``POST /v1/traces`` and ``POST /v1/metrics`` (protobuf) answer 200 with an empty export response;
``GET /counts`` answers ``{"spans": N, "span_posts": N, "metric_posts": N, "bytes": N}``, the spans decoded from
the requests (``opentelemetry-proto``, which the exporter brings). Runs until killed.
"""

from __future__ import annotations

import argparse
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

counts = {"spans": 0, "span_posts": 0, "metric_posts": 0, "bytes": 0}
lock = threading.Lock()


class Receiver(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # the exporter keeps its connection

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        spans = 0
        if self.path == "/v1/traces":
            export = ExportTraceServiceRequest.FromString(body)
            spans = sum(len(scope.spans) for resource in export.resource_spans for scope in resource.scope_spans)
        with lock:
            counts["bytes"] += len(body)
            counts["spans"] += spans
            counts["span_posts" if self.path == "/v1/traces" else "metric_posts"] += 1
        self._answer(b"", "application/x-protobuf")

    def do_GET(self) -> None:
        with lock:
            body = json.dumps(counts).encode()
        self._answer(body, "application/json")

    def _answer(self, body: bytes, content_type: str) -> None:
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:  # quiet
        pass


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    ThreadingHTTPServer(("127.0.0.1", args.port), Receiver).serve_forever()


if __name__ == "__main__":
    main()
