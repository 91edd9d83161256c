"""A private service for the private-service tests: it answers only a request whose
``X-Agentbus-Identity`` token verifies (``gateway.service_token.verify``), and says who
asked. Run as ``python sensor_service.py JWKS_FILE PORT AUDIENCE``."""

from __future__ import annotations

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from gateway.service_token import TOKEN_HEADER, ServiceTokenInvalid, verify


class Handler(BaseHTTPRequestHandler):
    """``GET /reading``: 200 with the token's claims, or 401 with why it was refused."""

    jwks: dict[str, Any] = {}
    audience = ""

    def do_GET(self) -> None:
        try:
            token = self.headers.get(TOKEN_HEADER, "")
            claims = verify(token, self.jwks, audience=self.audience)
            status, doc = 200, {"reading": 21.5, "asked_by": claims}
        except ServiceTokenInvalid as e:
            status, doc = 401, {"error": e.code, "message": str(e)}
        body = json.dumps(doc).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""


if __name__ == "__main__":
    Handler.jwks = json.loads(Path(sys.argv[1]).read_text())
    Handler.audience = sys.argv[3]
    Handler.jwks = json.loads(Path(sys.argv[1]).read_text())
    Handler.audience = sys.argv[3]
    ThreadingHTTPServer(("127.0.0.1", int(sys.argv[2])), Handler).serve_forever()
