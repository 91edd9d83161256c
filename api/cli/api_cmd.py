"""``agentbus api``: the HTTP/websocket edge and the admission of ``runs.questions``."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from typing import Annotated

import typer

from api.cli.common import run_async, settings
from api.compose.connection import connect
from api.compose.edge import run_edge
from api.compose.gc_pauses import freeze_startup_heap, watch_gc_pauses
from bus.store import open_store


@run_async
async def api(
    host: Annotated[str | None, typer.Option(help="Address to bind (AGENTBUS_API_HOST).")] = None,
    port: Annotated[
        int | None, typer.Option(min=0, max=65535, help="Port (AGENTBUS_API_PORT).")
    ] = None,
    admission: Annotated[
        bool, typer.Option(help="Also admit questions XADDed to runs.questions.")
    ] = True,
    migrate: Annotated[bool, typer.Option(help="Migrate the store to head first.")] = False,
) -> None:
    """Serve the REST API, the websocket edge and /docs; scale out behind a load balancer."""
    s = settings()
    watch_gc_pauses()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    async with open_store(s.bus, migrate=migrate) as stores, connect(s.bus) as conn:

        def started(bound: int) -> None:
            # Serving from here on: a full collection must not walk the startup heap.
            freeze_startup_heap()
            base = f"http://{host or s.api.api_host}:{bound}"
            typer.echo(f"agentbus api: {base}  (docs at /docs, the web page at {base}/)")

        await run_edge(s, conn.redis, stores, stop, host=host, port=port, on_started=started)
        typer.echo("agentbus api: stopped")
