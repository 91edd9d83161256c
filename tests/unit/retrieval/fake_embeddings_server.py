"""A real local HTTP server speaking OpenAI's ``POST /v1/embeddings`` (hashing vectors)."""

from __future__ import annotations

import json
import threading
from collections.abc import Generator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from retrieval.embedders.hashing import HashingEmbedder

DIM = 64


class _Handler(BaseHTTPRequestHandler):
    @property
    def embeddings(self) -> EmbeddingsServer:
        assert isinstance(self.server, EmbeddingsServer)
        return self.server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        self.embeddings.requests.append(
            {"path": self.path, "auth": self.headers.get("authorization"), **body}
        )
        if self.path != "/v1/embeddings" or self.embeddings.fail:
            self.send_response(500 if self.embeddings.fail else 404)
            self.end_headers()
            self.wfile.write(b'{"error": "nope"}')
            return
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
        # Reversed on purpose: clients must order by "index", not by position.
        data = [
            {
                "object": "embedding",
                "index": i,
                "embedding": [x * 3 for x in self.embeddings.model.vector(t)],
            }
            for i, t in reversed(list(enumerate(texts)))
        ]
        payload = json.dumps({"object": "list", "data": data, "model": body["model"]}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


class EmbeddingsServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.model = HashingEmbedder(DIM)
        self.requests: list[dict[str, Any]] = []
        self.fail = False


@contextmanager
def embeddings_server() -> Generator[EmbeddingsServer, None, None]:
    """Serve on a free loopback port for the duration of the block."""
    server = EmbeddingsServer()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
