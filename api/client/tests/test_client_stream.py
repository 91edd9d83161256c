"""``EventStream`` against a scripted websocket server: rejoins without gap or repeat."""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest
from websockets.asyncio.server import ServerConnection, serve

from agentbus_client.errors import NotFound, Unauthorized
from agentbus_client.stream import EventStream
from agentbus_contracts import Snapshot

Script = Callable[[ServerConnection, dict[str, Any], int], Awaitable[None]]


def frame(event_id: str, kind: str, **fields: Any) -> str:
    """An event as the API relays it: the event's JSON and its stream id."""
    return json.dumps({"id": event_id, "type": kind, "run_id": "r1", "ts": 1.0, **fields})


@asynccontextmanager
async def server(script: Script) -> AsyncGenerator[tuple[str, list[dict[str, Any]]]]:
    """A websocket server that runs ``script`` for each connection's ``join``."""
    joins: list[dict[str, Any]] = []

    async def handle(ws: ServerConnection) -> None:
        join = json.loads(await ws.recv())
        joins.append(join)
        await script(ws, join, len(joins))

    async with serve(handle, "127.0.0.1", 0) as running:
        port = next(iter(running.sockets)).getsockname()[1]
        yield f"ws://127.0.0.1:{port}/api/v1/ws", joins


async def test_a_dropped_connection_rejoins_after_the_last_event_with_no_repeat() -> None:
    async def script(ws: ServerConnection, join: dict[str, Any], n: int) -> None:
        await ws.send(json.dumps({"type": "ready"}))
        if n == 1:
            await ws.send(frame("1-0", "run_started", question="23 × 19?"))
            await ws.send(frame("2-0", "answer", delta="4"))
            await ws.close(1011)  # the API went away mid-answer
            return
        await ws.send(frame("2-0", "answer", delta="4"))  # replayed: already seen
        await ws.send(frame("3-0", "answer", delta="37"))
        await ws.send(frame("4-0", "done", status="done", answer="437"))
        await ws.wait_closed()

    async with server(script) as (url, joins):
        rejoined: list[str] = []
        stream = EventStream(url, {}, "r1", backoff_s=0.01, on_reconnect=rejoined.append)
        async with stream:
            events = [event async for event in stream]

    assert [e.type for e in events] == ["run_started", "answer", "answer", "done"]
    assert "".join(getattr(e, "delta", "") for e in events) == "437"
    assert [j["last_event_id"] for j in joins] == ["0-0", "2-0"] and rejoined == ["2-0"]
    assert stream.reconnects == 1 and stream.last_event_id == "4-0" and stream.finished


async def test_a_snapshot_of_an_ended_run_ends_the_stream() -> None:
    async def script(ws: ServerConnection, join: dict[str, Any], n: int) -> None:
        run = {"id": "r1", "status": "done", "answer": "437"}
        await ws.send(
            json.dumps({"type": "snapshot", "run_id": "r1", "last_event_id": "9-0", "run": run})
        )
        await ws.wait_closed()

    async with server(script) as (url, _):
        stream = EventStream(url, {}, "r1", last_event_id="1-0")
        items = [item async for item in stream]

    assert len(items) == 1 and isinstance(items[0], Snapshot) and items[0].run.answer == "437"
    assert stream.last_event_id == "9-0"


async def test_a_refused_join_raises_the_api_s_typed_error() -> None:
    async def script(ws: ServerConnection, join: dict[str, Any], n: int) -> None:
        error = {"type": "request_error", "code": "run_not_found", "message": "no run", "hint": ""}
        await ws.send(json.dumps(error))
        await ws.wait_closed()

    async with server(script) as (url, _):
        with pytest.raises(NotFound) as raised:
            async with EventStream(url, {}, "r1") as stream:
                _ = [item async for item in stream]

    assert raised.value.code == "run_not_found"


async def test_a_close_for_a_bad_key_is_not_retried() -> None:
    async def script(ws: ServerConnection, join: dict[str, Any], n: int) -> None:
        await ws.close(4401, "unauthorized")

    async with server(script) as (url, joins):
        with pytest.raises(Unauthorized):
            async with EventStream(url, {}, "r1", backoff_s=0.01) as stream:
                _ = [item async for item in stream]

    assert len(joins) == 1
