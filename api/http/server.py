"""Serving the API app with uvicorn in the current event loop (the caller owns the loop)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Generator

import uvicorn
from fastapi import FastAPI

from api.http.head_with_body import HeadWithBodyProtocol

GRACEFUL_S = 5


class _Server(uvicorn.Server):
    """uvicorn without its own signal handlers: the caller decides when to stop."""

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None]:
        """Leave signal handling to the process (e.g. the worker Runner's)."""
        yield


async def serve(
    app: FastAPI,
    host: str,
    port: int,
    stop_event: asyncio.Event,
    *,
    ws_max_bytes: int = 64 * 1024,
    log_level: str = "warning",
    on_started: Callable[[int], None] | None = None,
) -> None:
    """Serve ``app`` in the running loop until ``stop_event`` is set, then drain and return.

    Args:
        app: the app from ``create_app``.
        host: address to bind.
        port: port to bind (0 picks a free one; ``on_started`` receives it).
        stop_event: set it to stop; open requests get ``GRACEFUL_S`` seconds to finish.
        ws_max_bytes: largest websocket frame accepted (``ApiSettings.ws_max_frame_bytes``).
        log_level: uvicorn's log level.
        on_started: called with the bound port once the server listens.
    """
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        lifespan="on",
        # llhttp in C (httptools): h11, uvicorn's pure-Python parser, cost the API ~0.3 ms
        # of CPU per run in `agentbus bench api` (a POST and its event stream); each
        # response's head goes out with its body (`api.http.head_with_body`).
        http=HeadWithBodyProtocol,
        # The sans-I/O websockets implementation: the legacy one warns on import.
        ws="websockets-sansio",
        ws_max_size=ws_max_bytes,
        # Frames are small JSON events: per-message deflate would cost CPU per token batch.
        ws_per_message_deflate=False,
        log_level=log_level,
        log_config=None,
        access_log=False,
        timeout_graceful_shutdown=GRACEFUL_S,
    )
    server = _Server(config)

    async def stop_when_asked() -> None:
        await stop_event.wait()
        server.should_exit = True

    async def report_port() -> None:
        while not server.started:
            if server.should_exit:
                return
            await asyncio.sleep(0.01)
        if on_started is not None:
            on_started(server.servers[0].sockets[0].getsockname()[1])

    helpers = [asyncio.create_task(stop_when_asked()), asyncio.create_task(report_port())]
    try:
        await server.serve()
    finally:
        for task in helpers:
            task.cancel()
        await asyncio.gather(*helpers, return_exceptions=True)
