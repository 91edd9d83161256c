"""A real OTLP/HTTP trace receiver (``bench turn-calls --traced`` and the tracing tests):
decodes the protobuf the exporters POST."""

from __future__ import annotations

import gzip
import threading
from collections.abc import Generator
from contextlib import contextmanager
from dataclasses import dataclass, field
from socketserver import ThreadingMixIn
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)


@dataclass(frozen=True)
class ReceivedSpan:
    """One span as the receiver decoded it (ids in hex)."""

    name: str
    trace_id: str
    span_id: str
    parent_span_id: str
    kind: int
    service: str
    attributes: dict[str, Any]
    events: list[tuple[str, dict[str, Any]]]
    links: list[tuple[str, str]]
    status_code: int


def _value(v: Any) -> Any:
    kind = v.WhichOneof("value")
    return getattr(v, kind) if kind else None


def _attrs(items: Any) -> dict[str, Any]:
    return {a.key: _value(a.value) for a in items}


@dataclass
class Receiver:
    """Spans received so far; ``url`` is the OTEL_EXPORTER_OTLP_ENDPOINT to give exporters."""

    url: str
    spans: list[ReceivedSpan] = field(default_factory=lambda: [])
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, body: bytes) -> None:
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        found: list[ReceivedSpan] = []
        for rs in request.resource_spans:
            service = str(_attrs(rs.resource.attributes).get("service.name", ""))
            for ss in rs.scope_spans:
                for s in ss.spans:
                    found.append(
                        ReceivedSpan(
                            name=s.name,
                            trace_id=s.trace_id.hex(),
                            span_id=s.span_id.hex(),
                            parent_span_id=s.parent_span_id.hex(),
                            kind=s.kind,
                            service=service,
                            attributes=_attrs(s.attributes),
                            events=[(e.name, _attrs(e.attributes)) for e in s.events],
                            links=[(link.trace_id.hex(), link.span_id.hex()) for link in s.links],
                            status_code=s.status.code,
                        )
                    )
        with self.lock:
            self.spans.extend(found)

    def of_trace(self, trace_id: str) -> list[ReceivedSpan]:
        """The spans of one trace."""
        with self.lock:
            return [s for s in self.spans if s.trace_id == trace_id]


@contextmanager
def otlp_receiver() -> Generator[Receiver, None, None]:
    """Serve ``POST /v1/traces`` on a free port until the block ends."""
    receiver: Receiver

    # A WSGI app on wsgiref's server: `http.server` would be `api/http` to pyright here.
    def app(environ: dict[str, Any], start_response: Any) -> list[bytes]:
        body = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
        if environ.get("HTTP_CONTENT_ENCODING") == "gzip":
            body = gzip.decompress(body)
        if environ.get("PATH_INFO") != "/v1/traces":
            start_response("404 Not Found", [("Content-Length", "0")])
            return [b""]
        receiver.add(body)
        reply = ExportTraceServiceResponse().SerializeToString()
        headers = [("Content-Type", "application/x-protobuf"), ("Content-Length", str(len(reply)))]
        start_response("200 OK", headers)
        return [reply]

    class Quiet(WSGIRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            return

    class Threaded(ThreadingMixIn, WSGIServer):
        daemon_threads = True

    server = make_server("127.0.0.1", 0, app, server_class=Threaded, handler_class=Quiet)
    receiver = Receiver(url=f"http://127.0.0.1:{server.server_port}")
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
