"""A worker's HTTP side: ``/metrics`` for Prometheus, ``/healthz`` and ``/readyz`` for probes.

A worker process has no web server of its own, so this runs a small WSGI server in a
thread. Liveness is a heartbeat the event loop writes every second: a loop that is stuck
(a blocking call, a deadlock) stops writing it, and ``/healthz`` turns 503 while the
server thread still answers. Readiness is the worker having connected and set up its
consumer groups.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterable
from socketserver import ThreadingMixIn
from typing import Any, cast
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import make_wsgi_app  # pyright: ignore[reportUnknownVariableType]

StartResponse = Callable[..., Any]


class Health:
    """What the probes report: the loop's last heartbeat and whether start-up is done."""

    def __init__(self, stale_after_s: float = 15.0) -> None:
        self.stale_after_s = stale_after_s
        self._beat = time.monotonic()
        self._ready = False

    def ready(self) -> None:
        """Start-up is done: the worker reads its streams."""
        self._ready = True

    def alive(self) -> bool:
        """True while the event loop wrote a heartbeat within ``stale_after_s``."""
        return time.monotonic() - self._beat < self.stale_after_s

    def is_ready(self) -> bool:
        """True once started and while alive."""
        return self._ready and self.alive()

    async def beat(self, period_s: float = 1.0) -> None:
        """Write the heartbeat from the event loop until cancelled."""
        while True:
            self._beat = time.monotonic()
            await asyncio.sleep(period_s)


class _Server(ThreadingMixIn, WSGIServer):
    daemon_threads = True


class _Quiet(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        """Probes every few seconds would flood the log; structlog logs what matters."""


def wsgi_app(health: Health) -> Callable[[dict[str, Any], StartResponse], Iterable[bytes]]:
    """The WSGI app: the two probes, and Prometheus metrics on every other path."""
    # prometheus_client leaves the app partly untyped: it is a plain WSGI app.
    metrics = cast("Callable[[dict[str, Any], StartResponse], Iterable[bytes]]", make_wsgi_app())

    def app(environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "")
        if path in ("/healthz", "/readyz"):
            ok = health.alive() if path == "/healthz" else health.is_ready()
            status = "200 OK" if ok else "503 Service Unavailable"
            start_response(status, [("Content-Type", "text/plain")])
            return [b"ok\n" if ok else b"not ok\n"]
        return metrics(environ, start_response)

    return app


def serve(port: int, health: Health, host: str = "0.0.0.0") -> WSGIServer:
    """Serve the probes and metrics on ``host:port`` from a daemon thread."""
    server = make_server(host, port, wsgi_app(health), _Server, handler_class=_Quiet)
    threading.Thread(target=server.serve_forever, name="agentbus-health", daemon=True).start()
    return server
