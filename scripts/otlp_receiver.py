#!/usr/bin/env python3
"""A minimal OTLP/HTTP trace receiver for the end-to-end tests (SPEC §12, issue 32).

Listens on 127.0.0.1:PORT, accepts `POST /v1/traces` with an `application/x-protobuf`
ExportTraceServiceRequest (what the functions' opentelemetry-otlp exporter sends), answers an
empty ExportTraceServiceResponse, appends each body as received to OUT.pb (a 4-byte big-endian
length, then the bytes: for tests that decode OTLP themselves, tests/e2e/test_traces.py) and one
JSON line per span to OUT:

    {"service": "mcp-gateway", "trace_id": "<32 hex>", "span_id": "<16 hex>",
     "parent_span_id": "<16 hex or empty>", "name": "...", "kind": "SPAN_KIND_SERVER",
     "status": "STATUS_CODE_ERROR" | "STATUS_CODE_UNSET" | ..., "attributes": {...},
     "resource": {...}, "events": [...]}

`GET /healthz` answers 200 (for the scripts' wait); anything else gets 404 (path), 415
(content type) or 400 (not the message). Run: otlp_receiver.py PORT OUT.
Stops on SIGTERM.
"""

from __future__ import annotations

import json
import signal
import struct
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from google.protobuf.json_format import MessageToDict
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

MAX_BODY = 16 * 1024 * 1024
LOCK = threading.Lock()


def value(any_value) -> object:
    """An OTLP AnyValue as a plain Python value."""
    kind = any_value.WhichOneof("value")
    if kind is None:
        return None
    if kind in ("array_value", "kvlist_value", "bytes_value"):
        return MessageToDict(any_value)
    return getattr(any_value, kind)


def attributes(kvs) -> dict[str, object]:
    return {kv.key: value(kv.value) for kv in kvs}


def spans(request: ExportTraceServiceRequest):
    """One dict per span of `request`."""
    for rs in request.resource_spans:
        resource = attributes(rs.resource.attributes)
        for ss in rs.scope_spans:
            for span in ss.spans:
                yield {
                    "service": resource.get("service.name", ""),
                    "trace_id": span.trace_id.hex(),
                    "span_id": span.span_id.hex(),
                    "parent_span_id": span.parent_span_id.hex(),
                    "name": span.name,
                    "kind": Span.SpanKind.Name(span.kind),
                    "status": Status.StatusCode.Name(span.status.code),
                    "status_message": span.status.message,
                    "attributes": attributes(span.attributes),
                    "resource": resource,
                    "events": [
                        {"name": e.name, "attributes": attributes(e.attributes)} for e in span.events
                    ],
                }


def handler(out_path: str):
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            if self.path != "/healthz":
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("content-length", "0")
            self.end_headers()

        def do_POST(self) -> None:  # noqa: N802 (http.server's name)
            if self.path != "/v1/traces":
                self.send_error(404)
                return
            if self.headers.get("content-type", "").split(";")[0].strip() != "application/x-protobuf":
                self.send_error(415)
                return
            length = int(self.headers.get("content-length") or 0)
            if length > MAX_BODY:
                self.send_error(413)
                return
            request = ExportTraceServiceRequest()
            raw = self.rfile.read(length)
            try:
                request.ParseFromString(raw)
            except Exception:  # a body that is not the message
                self.send_error(400)
                return
            lines = [json.dumps(s, sort_keys=True) + "\n" for s in spans(request)]
            with LOCK:
                with open(out_path + ".pb", "ab") as out:
                    out.write(struct.pack(">I", len(raw)) + raw)
                with open(out_path, "a", encoding="utf-8") as out:
                    out.writelines(lines)
            body = ExportTraceServiceResponse().SerializeToString()
            self.send_response(200)
            self.send_header("content-type", "application/x-protobuf")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args) -> None:  # noqa: A002 (http.server's name)
            pass

    return Handler


def main() -> int:
    if len(sys.argv) != 3:
        print("usage: otlp_receiver.py PORT OUT", file=sys.stderr)
        return 2
    port, out_path = int(sys.argv[1]), sys.argv[2]
    open(out_path, "a").close()
    server = ThreadingHTTPServer(("127.0.0.1", port), handler(out_path))
    signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=server.shutdown).start())
    print(f"otlp receiver on http://127.0.0.1:{port}/v1/traces -> {out_path}", flush=True)
    server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
