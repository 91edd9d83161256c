"""A webhook receiver in its own process, for push notification tests.

``python push_receiver.py OUT``: listens on 127.0.0.1 (a free port, printed on the first
line of stdout), answers every POST 200 and appends it to ``OUT`` as one JSON line
(``path``, ``headers`` with lower-case names, ``body`` as text).
"""

from __future__ import annotations

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def main(out: str) -> None:
    """Serve until killed."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            headers = {k.lower(): v for k, v in self.headers.items()}
            line = {"path": self.path, "headers": headers, "body": body.decode()}
            with open(out, "a", encoding="utf-8") as f:
                f.write(json.dumps(line) + "\n")
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: object) -> None:
            pass  # quiet: the test reads OUT

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main(sys.argv[1])
