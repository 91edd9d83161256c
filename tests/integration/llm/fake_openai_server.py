"""A real HTTP server on 127.0.0.1 that streams OpenAI-style chat completions (SSE).

It answers with the contract's canonical turn, translated to chat-completion chunks the way
real servers send them: tool-call arguments split over several chunks, reasoning in
``reasoning_content`` (or ``reasoning``), usage in a final chunk without choices. Tests queue
faults in :attr:`FakeOpenAIServer.plan` (an HTTP status, a stall, a dropped connection, raw
lines); each request consumes one, and requests after the plan get the canonical answer.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from agents.llm.ports import (
    ChatMessage,
    LLMEvent,
    LLMOptions,
    ReasoningDelta,
    TextDelta,
    ToolCall,
    ToolDefinition,
    Usage,
)
from tests.contracts.llm import canonical_turn

Responder = Callable[
    [Sequence[ChatMessage], Sequence[ToolDefinition], LLMOptions], Sequence[LLMEvent]
]


@dataclass
class Status:
    """Answer with this HTTP status and JSON error body."""

    code: int
    message: str = "error"
    headers: dict[str, str] = field(default_factory=dict)
    error_code: str | None = None


@dataclass
class Stall:
    """Send ``before`` chunks of the canonical answer, then go silent for ``seconds``."""

    seconds: float
    before: int = 0


@dataclass
class Drop:
    """Send ``before`` chunks of the canonical answer, then close the connection."""

    before: int = 0


@dataclass
class Raw:
    """Send these lines verbatim as the response body, with this content type."""

    lines: list[str]
    content_type: str = "text/event-stream"


Fault = Status | Stall | Drop | Raw


class FakeOpenAIServer:
    """Serves ``POST /v1/chat/completions`` on a random port, in a background thread."""

    def __init__(
        self,
        respond: Responder = canonical_turn,
        *,
        api_key: str = "test-key",
        model: str = "fake-model",
        reasoning_key: str = "reasoning_content",
        argument_pieces: int = 4,
        models: Sequence[str] = (),
    ) -> None:
        self.respond = respond
        self.api_key, self.model = api_key, model
        self.models = {model, *models}  # every name it serves
        self.reasoning_key, self.argument_pieces = reasoning_key, argument_pieces
        self.plan: list[Fault] = []
        self.requests: list[dict[str, Any]] = []
        self.closing = threading.Event()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._httpd.daemon_threads = True
        # A short poll interval makes shutdown() (and so each test's teardown) fast.
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def base_url(self) -> str:
        """The API root, ending in ``/v1``."""
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def start(self) -> FakeOpenAIServer:
        """Start serving; returns self."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and wake any stalled responses."""
        self.closing.set()
        if self._thread.is_alive():
            self._httpd.shutdown()
            self._thread.join(timeout=5)
        self._httpd.server_close()

    def chunks(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        """The canonical answer to ``body`` as chat-completion chunks."""
        messages, tools, options = _decode_request(body)
        events = self.respond(messages, tools, options)
        base: dict[str, Any] = {
            "id": "chatcmpl-fake",
            "object": "chat.completion.chunk",
            "model": self.model,
        }
        out: list[dict[str, Any]] = [
            {**base, "choices": [{"index": 0, "delta": {"role": "assistant"}}]}
        ]

        def add(delta: dict[str, Any]) -> None:
            out.append({**base, "choices": [{"index": 0, "delta": delta}]})

        calls = [e for e in events if isinstance(e, ToolCall)]
        for event in events:
            if isinstance(event, ReasoningDelta):
                add({self.reasoning_key: event.text})
            elif isinstance(event, TextDelta):
                add({"content": event.text})
        for index, call in enumerate(calls):
            head = {"index": index, "id": call.id, "type": "function"}
            add({"tool_calls": [{**head, "function": {"name": call.name, "arguments": ""}}]})
            for piece in _split(json.dumps(call.arguments), self.argument_pieces):
                add({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
        finish = "tool_calls" if calls else "stop"
        out.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
        used = next((e for e in events if isinstance(e, Usage)), Usage())
        if (body.get("stream_options") or {}).get("include_usage"):
            usage = {
                "prompt_tokens": used.prompt_tokens,
                "completion_tokens": used.completion_tokens,
                "total_tokens": used.total_tokens,
            }
            out.append({**base, "choices": [], "usage": usage})
        return out


def _split(text: str, pieces: int) -> list[str]:
    size = max(1, -(-len(text) // pieces))
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def _decode_request(
    body: dict[str, Any],
) -> tuple[list[ChatMessage], list[ToolDefinition], LLMOptions]:
    """Read the wire request back into port types, as a real server would interpret it."""
    messages: list[ChatMessage] = []
    names: dict[str, str] = {}
    for wire in body["messages"]:
        calls = [
            ToolCall(
                id=c["id"],
                name=c["function"]["name"],
                arguments=json.loads(c["function"]["arguments"]),
            )
            for c in wire.get("tool_calls") or ()
        ]
        names.update({c.id: c.name for c in calls})
        if wire["role"] == "tool":
            call_id = wire["tool_call_id"]
            messages.append(
                ChatMessage(
                    role="tool",
                    content=wire["content"],
                    tool_call_id=call_id,
                    name=names.get(call_id, "tool"),
                )
            )
        else:
            messages.append(
                ChatMessage(
                    role=wire["role"], content=wire.get("content") or "", tool_calls=tuple(calls)
                )
            )
    tools = [
        ToolDefinition(
            name=t["function"]["name"],
            description=t["function"].get("description", ""),
            parameters=t["function"].get("parameters", {}),
        )
        for t in body.get("tools") or ()
    ]
    schema = (body.get("response_format") or {}).get("json_schema", {}).get("schema")
    options = LLMOptions(
        think=bool((body.get("chat_template_kwargs") or {}).get("enable_thinking")),
        response_schema=schema,
        max_tokens=body.get("max_tokens"),
        temperature=body.get("temperature"),
    )
    return messages, tools, options


def _handler(server: FakeOpenAIServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass  # keep test output clean

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", 0))
            body = json.loads(self.rfile.read(length))
            server.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
            fault = server.plan.pop(0) if server.plan else None
            if isinstance(fault, Status):
                return self._status(fault)
            if self.headers.get("Authorization") != f"Bearer {server.api_key}":
                return self._status(Status(401, "Incorrect API key provided"))
            if self.path != "/v1/chat/completions" or body.get("model") not in server.models:
                message = f"The model `{body.get('model')}` does not exist"
                return self._status(Status(404, message, error_code="model_not_found"))
            if isinstance(fault, Raw):
                return self._send(fault.content_type, fault.lines)
            chunks = server.chunks(body)
            lines = [f"data: {json.dumps(c)}" for c in chunks] + ["data: [DONE]"]
            if isinstance(fault, Stall | Drop):
                lines = lines[: fault.before]
            self._send("text/event-stream", lines, stall=fault)

        def _status(self, fault: Status) -> None:
            error = {"message": fault.message, "type": "error", "code": fault.error_code}
            payload = json.dumps({"error": error}).encode()
            self.send_response(fault.code)
            for name, value in {"Content-Type": "application/json", **fault.headers}.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def _send(self, content_type: str, lines: list[str], stall: Fault | None = None) -> None:
            self.send_response(200)
            self.send_header("Content-Type", content_type)
            self.end_headers()
            try:
                for line in lines:
                    self.wfile.write(f"{line}\n\n".encode())
                    self.wfile.flush()
                if isinstance(stall, Stall):
                    server.closing.wait(stall.seconds)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up first, as timeout tests intend

    return Handler
