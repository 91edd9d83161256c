"""The API's HTTP protocol writes a response's head with its body, and never holds a
streamed response's head back from a client waiting for it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import httpx
from fastapi import FastAPI
from fastapi.responses import StreamingResponse

from api.http.head_with_body import HeldHead
from api.http.server import serve

HEAD = b"HTTP/1.1 202 Accepted\r\ncontent-length: 2\r\n\r\n"


class Socket:
    """A transport that records what is written to it."""

    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.closed = False

    def write(self, data: bytes) -> None:
        assert not self.closed
        self.writes.append(bytes(data))

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True

    def get_extra_info(self, name: str) -> str:
        return f"extra {name}"


def held(socket: Socket) -> Any:
    return HeldHead(socket, asyncio.get_running_loop())  # type: ignore[arg-type]


async def test_a_head_and_its_body_written_in_one_step_are_one_write() -> None:
    socket = Socket()
    transport = held(socket)
    transport.write(HEAD)
    transport.write(b"{}")
    assert socket.writes == [HEAD + b"{}"]
    await asyncio.sleep(0)
    assert socket.writes == [HEAD + b"{}"]


async def test_a_head_whose_body_comes_later_is_written_on_the_loops_next_pass() -> None:
    socket = Socket()
    transport = held(socket)
    transport.write(HEAD)
    assert socket.writes == []
    await asyncio.sleep(0)
    assert socket.writes == [HEAD]
    transport.write(b"{}")
    assert socket.writes == [HEAD, b"{}"]


async def test_a_closed_connection_gets_its_held_head_first() -> None:
    socket = Socket()
    transport = held(socket)
    transport.write(HEAD)
    transport.close()
    assert socket.writes == [HEAD] and socket.closed
    await asyncio.sleep(0)  # the pending release writes nothing to the closed socket
    assert socket.writes == [HEAD]
    assert transport.get_extra_info("peername") == "extra peername"


async def test_a_streamed_response_reaches_the_client_before_its_first_event() -> None:
    app = FastAPI()
    client_has_head = asyncio.Event()

    async def events() -> AsyncIterator[str]:
        await client_has_head.wait()  # the head never waits for the body
        yield "data: one\n\n"

    @app.get("/events")
    async def stream() -> StreamingResponse:  # pyright: ignore[reportUnusedFunction]
        return StreamingResponse(events(), media_type="text/event-stream")

    @app.post("/runs", status_code=202)
    async def start() -> dict[str, str]:  # pyright: ignore[reportUnusedFunction]
        return {"run_id": "r1"}

    stop, bound = asyncio.Event(), asyncio.get_running_loop().create_future()
    server = asyncio.create_task(
        serve(app, "127.0.0.1", 0, stop, on_started=bound.set_result, log_level="error")
    )
    try:
        base = f"http://127.0.0.1:{await asyncio.wait_for(bound, 10)}"
        async with httpx.AsyncClient(base_url=base, timeout=10) as client:
            started = await client.post("/runs")
            assert started.status_code == 202 and started.json() == {"run_id": "r1"}
            async with client.stream("GET", "/events") as response:
                assert response.headers["content-type"].startswith("text/event-stream")
                client_has_head.set()
                assert [line async for line in response.aiter_lines() if line] == ["data: one"]
    finally:
        stop.set()
        await server
