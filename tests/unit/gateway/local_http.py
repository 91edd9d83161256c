"""Test kit for gateway tests: a real HTTP(S) server on loopback and a test-only resolver.

Kept out of conftest so test modules can import it.

The SSRF guard is never switched off. A made-up host name resolves (through `FakeResolver`)
to PUBLIC_IP, which the guard checks and allows; the egress client's `connect_override`
then maps that checked address to 127.0.0.1, where `LocalServer` listens. A URL that names
127.0.0.1 directly, or a resolver answer that is private, is still refused.
"""

from __future__ import annotations

import ssl
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

#: A public address (example.com's) that test names resolve to; never contacted.
PUBLIC_IP = "93.184.216.34"
OVERRIDE = {PUBLIC_IP: "127.0.0.1"}


@dataclass
class Seen:
    """One request the local server received."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes


Reply = tuple[int, dict[str, str], bytes]
Route = Callable[[Seen], Reply]


@dataclass
class LocalServer:
    """A threaded HTTP server on 127.0.0.1 with per-test routes; records every request."""

    routes: dict[str, Route] = field(default_factory=dict)
    seen: list[Seen] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)
    port: int = 0
    sni: list[str | None] = field(default_factory=list)

    def route(self, path: str, status: int = 200, body: bytes | str = b"", **headers: str) -> None:
        """Serve a fixed reply at `path` (header names use _ for -)."""
        data = body.encode() if isinstance(body, str) else body
        hdrs = {k.replace("_", "-"): v for k, v in headers.items()}
        self.routes[path] = lambda _seen: (status, hdrs, data)

    def paths(self) -> list[str]:
        """Paths requested so far, in order."""
        return [s.path for s in self.seen]


def _handler(state: LocalServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            seen = Seen(
                self.command,
                self.path,
                {k.lower(): v for k, v in self.headers.items()},
                self.rfile.read(length),
            )
            state.seen.append(seen)
            route = state.routes.get(self.path.split("?")[0])
            status, headers, body = route(seen) if route else (404, {}, b"not found")
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = _serve

        def log_message(self, format: str, *args: Any) -> None:
            pass  # keep test output clean

    return Handler


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that gave up (timeout tests) is expected


def serve(state: LocalServer, tls: ssl.SSLContext | None) -> Iterator[LocalServer]:
    server = _Server(("127.0.0.1", 0), _handler(state))
    if tls is not None:
        server.socket = tls.wrap_socket(server.socket, server_side=True)
    state.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield state
    finally:
        state.stop.set()
        server.shutdown()
        server.server_close()
        thread.join(5)


class FakeResolver:
    """Test DNS: a fixed map, or a per-host queue of answers (for rebinding); records calls."""

    def __init__(self, answers: dict[str, Sequence[str] | list[Sequence[str]]]) -> None:
        self.answers = answers
        self.calls: list[str] = []

    async def __call__(self, host: str, port: int) -> Sequence[str]:
        self.calls.append(host)
        answer = self.answers.get(host)
        if answer is None:
            raise OSError(f"NXDOMAIN {host}")
        if answer and not isinstance(answer[0], str):  # a queue: one answer per lookup
            queue: list[Sequence[str]] = answer  # type: ignore[assignment]
            return queue.pop(0) if len(queue) > 1 else queue[0]
        return answer  # type: ignore[return-value]
