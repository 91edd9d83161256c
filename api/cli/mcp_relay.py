"""The relay behind ``agentbus mcp``: MCP's stdio transport on one side, the API's
streamable-HTTP endpoint on the other, JSON-RPC messages passed through as they are.

Each message the assistant writes (one JSON document per line) is POSTed on its own, and
runs concurrently with the others, so a ping or a cancellation is not held up behind a
long tool call. The API answers a request with JSON or with server-sent events (progress
notifications, then the result); each message in it is written to stdout as one line as it
arrives. A notification gets ``202 Accepted`` and nothing to write. A request the API
refuses (an HTTP error) is answered with a JSON-RPC error for its id, the API's own when its
body holds one. When stdin closes, the calls still running are dropped, and the API ends
their runs (a closed stream is a cancellation to it).

The assistant's ``server/discover`` (the 2026 stateless era's probe) is answered "method not
found", so it falls back to the ``initialize`` handshake, which the API's endpoint speaks.
"""

from __future__ import annotations

import asyncio
import json
import sys
import threading
from collections.abc import AsyncIterator
from typing import Any, cast

import httpx

#: JSON-RPC's codes: a line that is not JSON, a method not served, a failure on the way.
PARSE_ERROR = -32700
METHOD_NOT_FOUND = -32601
INTERNAL_ERROR = -32603
#: The version the start-up check offers (the handshake era's newest).
CHECK_VERSION = "2025-11-25"

Message = dict[str, Any]


class RelayError(Exception):
    """The API's endpoint could not be reached, or refused the relay's check."""


async def relay(endpoint: str, key: str) -> None:
    """Check ``endpoint`` with ``key``, then relay stdin to it and its answers to stdout."""
    headers = {"Authorization": f"Bearer {key}", "Accept": "application/json, text/event-stream"}
    # No read limit: an answer takes as long as its run (the API sends keep-alive events).
    timeout = httpx.Timeout(30.0, read=None)
    async with httpx.AsyncClient(headers=headers, timeout=timeout, trust_env=False) as http:
        bridge = Bridge(http, endpoint)
        await bridge.check()
        await bridge.serve(_stdin_lines())


class Bridge:
    """Passes messages between one stdio peer and the API's ``/mcp`` endpoint."""

    def __init__(self, http: httpx.AsyncClient, endpoint: str) -> None:
        self._http = http
        self._endpoint = endpoint
        self._version: str | None = None  # what the handshake settled on, sent with each POST

    async def check(self) -> None:
        """The endpoint answers an ``initialize`` with ``key`` (else `RelayError`)."""
        probe = {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": CHECK_VERSION,
                "capabilities": {},
                "clientInfo": {"name": "agentbus-mcp", "version": "0"},
            },
        }
        replies = [reply async for reply in self._post(probe)]
        if not any("result" in reply for reply in replies):
            errors = [str(reply.get("error", {}).get("message", "")) for reply in replies]
            raise RelayError("; ".join(e for e in errors if e) or "no answer to initialize")

    async def serve(self, lines: AsyncIterator[bytes]) -> None:
        """Relay each line of ``lines`` until they end, then drop the calls still running."""
        running: set[asyncio.Task[None]] = set()
        try:
            async for line in lines:
                if not line.strip():
                    continue
                task = asyncio.create_task(self._relay_one(line))
                running.add(task)
                task.add_done_callback(running.discard)
        finally:
            for task in running:
                task.cancel()
            await asyncio.gather(*running, return_exceptions=True)

    async def _relay_one(self, line: bytes) -> None:
        try:
            message = json.loads(line)
        except ValueError:
            _write(_error(None, PARSE_ERROR, "not a JSON document"))
            return
        if not isinstance(message, dict):
            _write(_error(None, PARSE_ERROR, "not a JSON-RPC message"))
            return
        request = cast("Message", message)
        ident = request.get("id") if "method" in request else None
        if request.get("method") == "server/discover":
            _write(_error(ident, METHOD_NOT_FOUND, "server/discover: use initialize"))
            return
        try:
            async for reply in self._post(request):
                if request.get("method") == "initialize" and isinstance(reply.get("result"), dict):
                    version = reply["result"].get("protocolVersion")
                    self._version = version if isinstance(version, str) else None
                _write(reply)
        except (httpx.HTTPError, ValueError) as e:
            if ident is not None:
                _write(_error(ident, INTERNAL_ERROR, f"the API's MCP endpoint failed: {e}"))

    async def _post(self, message: Message) -> AsyncIterator[Message]:
        """POST ``message``; yield each JSON-RPC message of the answer as it arrives."""
        headers = {"MCP-Protocol-Version": self._version} if self._version else {}
        ident = message.get("id") if "method" in message else None
        async with self._http.stream(
            "POST", self._endpoint, json=message, headers=headers
        ) as response:
            kind = response.headers.get("content-type", "")
            if kind.startswith("text/event-stream") and response.is_success:
                async for data in _events(response.aiter_lines()):
                    yield json.loads(data)
                return
            body = await response.aread()
            if response.is_success:
                if body.strip():
                    yield json.loads(body)
                return
            yield _refusal(ident, response.status_code, body)


async def _events(lines: AsyncIterator[str]) -> AsyncIterator[str]:
    """The data of each server-sent event (events without data, such as keep-alives, skipped)."""
    data: list[str] = []
    async for line in lines:
        if line.startswith("data:"):
            data.append(line.removeprefix("data:").removeprefix(" "))
        elif not line and data:
            yield "\n".join(data)
            data = []
    if data:
        yield "\n".join(data)


def _refusal(ident: Any, status: int, body: bytes) -> Message:
    """The JSON-RPC error for a request the API refused with ``status``: the API's own error
    when the body holds one (with the request's id), else one that names the status."""
    try:
        doc = json.loads(body)
    except ValueError:
        doc = None
    if isinstance(doc, dict):
        error = cast("Message", doc).get("error")
        if isinstance(error, dict):
            return {"jsonrpc": "2.0", "id": ident, "error": cast("Message", error)}
    text = body.decode(errors="replace").strip()[:200]
    return _error(ident, INTERNAL_ERROR, f"HTTP {status}" + (f": {text}" if text else ""))


def _error(ident: Any, code: int, message: str) -> Message:
    return {"jsonrpc": "2.0", "id": ident, "error": {"code": code, "message": message}}


def _write(message: Message) -> None:
    """One message on stdout, one line (written whole: the event loop runs one task at a time)."""
    sys.stdout.buffer.write(json.dumps(message, separators=(",", ":")).encode() + b"\n")
    sys.stdout.buffer.flush()


async def _stdin_lines() -> AsyncIterator[bytes]:
    """Stdin's lines, read by a daemon thread (any stdin works: a pipe, a file, a terminal;
    a thread blocked in a read does not hold the process when it exits)."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[bytes] = asyncio.Queue()

    def read() -> None:
        for line in sys.stdin.buffer:
            loop.call_soon_threadsafe(queue.put_nowait, line)
        loop.call_soon_threadsafe(queue.put_nowait, b"")

    threading.Thread(target=read, name="mcp-stdin", daemon=True).start()
    while line := await queue.get():
        yield line
