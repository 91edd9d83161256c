"""A remote command (``--api-url``) reaches its request without loading the server: what a
process holds after ``agentbus ask --api-url`` or ``agentbus mcp --api-url`` ran against a
stand-in API (which refuses the key, so the command ends)."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

#: The server's frameworks, stores and clients, and the MCP SDK (the relay speaks JSON-RPC
#: itself): none is needed to send a request to a remote API.
NOT_FOR_A_REMOTE_COMMAND = (
    "fastapi",
    "starlette",
    "uvicorn",
    "sqlalchemy",
    "alembic",
    "qdrant_client",
    "qdrant_edge",
    "onnxruntime",
    "redis",
    "mcp",
    "mcp_types",
)

_PROBE = """
import json, sys
from api.cli.main import app
try:
    app(sys.argv[1:])
except SystemExit:
    pass
print(json.dumps(sorted({name.split(".")[0] for name in sys.modules})), file=sys.stderr)
"""


class _Refuses(BaseHTTPRequestHandler):
    """Answers every request 401 with the API's error body, and counts them."""

    seen: list[str] = []

    def _refuse(self) -> None:
        _Refuses.seen.append(f"{self.command} {self.path}")
        self.rfile.read(int(self.headers.get("content-length") or 0))
        body = json.dumps(
            {"error": {"code": "unauthorized", "message": "unknown key", "hint": ""}}
        ).encode()
        self.send_response(401)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = _refuse

    def log_message(self, format: str, *args: object) -> None:
        """Quiet."""


@pytest.fixture(scope="module")
def stand_in() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Refuses)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize(
    "args",
    [["ask", "--api-url", "{url}", "What is 23 × 19?"], ["mcp", "--api-url", "{url}"]],
    ids=["ask", "mcp"],
)
def test_a_remote_command_sends_its_request_without_loading_the_server(
    stand_in: str, args: list[str]
) -> None:
    before = len(_Refuses.seen)
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, *(a.format(url=stand_in) for a in args)],
        capture_output=True,
        text=True,
        timeout=60,
        input="",
        env={"PATH": "/usr/bin:/bin", "AGENTBUS_API_KEY": "abk_remote_check"},
    )
    loaded = set(json.loads(done.stderr.strip().splitlines()[-1]))

    assert len(_Refuses.seen) > before  # it did reach the stand-in
    assert "httpx" in loaded
    assert sorted(loaded & set(NOT_FOR_A_REMOTE_COMMAND)) == []
