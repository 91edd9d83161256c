"""``agentbus up``, ``agentbus worker`` and ``agentbus api``: the commands that serve.

``up`` runs every role's workers in this process and the API in a child process; ``worker``
runs some roles (start more to scale out); ``api`` serves the HTTP/websocket edge and the
admission of ``runs.questions``.
"""

from __future__ import annotations

import contextlib
import signal
import subprocess
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Annotated

import typer

from api.cli import login_url
from api.cli.common import run_async, settings
from bus.keys import Role  # an enum of names alone: `worker`'s argument type

if TYPE_CHECKING:
    import asyncio


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
    import asyncio  # here, not at the top: a tenth of the time to print a help

    from api.compose.commands import state_store
    from api.compose.connection import connect
    from api.compose.edge import run_edge
    from api.compose.gc_pauses import freeze_startup_heap, watch_gc_pauses

    s = settings()
    watch_gc_pauses()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    async with state_store(s, migrate=migrate) as stores, connect(s.bus) as conn:

        def started(bound: int) -> None:
            # Serving from here on: a full collection must not walk the startup heap.
            freeze_startup_heap()
            base = f"http://{host or s.api.api_host}:{bound}"
            typer.echo(f"agentbus api: {base}  (docs at /docs, the web page at {base}/)")

        await run_edge(s, conn.redis, stores, stop, host=host, port=port, on_started=started)
        typer.echo("agentbus api: stopped")


@run_async
async def up(
    concurrency: Annotated[int, typer.Option(min=1, help="Steps in flight per role.")] = 8,
    processes: Annotated[
        int,
        typer.Option(
            min=1,
            help="Worker processes, this one included: 2 on a 2-core machine uses both "
            "cores (keep 1 with the local model, which spreads over every core itself).",
        ),
    ] = 1,
) -> None:
    """Start the whole system on embedded defaults (Ctrl-C stops it)."""
    import asyncio

    from api.compose.commands import state_store
    from api.compose.connection import connect
    from api.compose.edge_process import edge_process, free_port, stop_edge
    from api.compose.gc_pauses import freeze_startup_heap
    from api.compose.local_key import ensure_local_key, local_key_message, page_login_url
    from api.compose.processes import helper_processes, helper_roles
    from api.compose.retention import start_retention
    from api.compose.roles import UP_ROLES, Roles
    from api.compose.workers import build_workers
    from bus.runtime.runner import Runner

    s = settings()
    async with (
        state_store(s, migrate=True) as stores,
        connect(s.bus, embedded=True) as conn,
    ):
        roles = Roles(s, stores, redis=conn.redis)
        workers = build_workers(
            UP_ROLES, conn.redis, s.bus, roles, concurrency=concurrency, own_store=True
        )
        for w in workers:  # before anyone is told to publish: a new group starts at "$"
            await w.ensure_groups()
        typer.echo(f"agentbus up: redis {conn.url}, store {s.bus.resolved_database_url()}")
        n = processes
        typer.echo(f"llm: {s.agents.llm}; roles: {', '.join(UP_ROLES)}; processes: {n}")
        typer.echo('try: agentbus ask "What is 23 × 19?"')
        key = await ensure_local_key(s.api, stores.keys)  # first start only
        if key:
            typer.echo(local_key_message(key, s.api))
        beat = _serve_health(s.bus.metrics_port)
        # One process of the deployment prunes at a time (a lease in Redis).
        pruning = start_retention(s.bus, stores, conn.redis)
        stop = asyncio.Event()
        helpers = helper_roles(s.retrieval, UP_ROLES)

        async def show_page(port: int) -> None:
            url = await page_login_url(
                s.api, conn.redis, stores.keys, host=s.api.api_host, port=port
            )
            typer.echo(f"api: http://{s.api.api_host}:{port}/docs  (Ctrl-C to stop)")
            typer.echo(login_url.page_message(url))

        host = s.api.api_host
        port = s.api.api_port or free_port(host)
        with (
            helper_processes(n - 1, helpers, conn.url, concurrency),
            edge_process(conn.url, host, port) as api_proc,
        ):
            # A signal stops the edge first (no new work comes in; its open requests get
            # their grace period), then the workers drain; the API does not wait for them.
            runner = Runner(workers, conn.redis, on_signal=lambda: stop_edge(api_proc, stop))
            freeze_startup_heap()  # built: a full collection must not walk the startup heap
            edge = asyncio.create_task(
                _follow_edge(api_proc, host, port, show_page, stop, runner.stop)
            )
            try:
                await runner.run()  # owns SIGTERM/SIGINT: drain, stop
            finally:
                stop.set()
                edge.cancel()
                await asyncio.gather(edge, return_exceptions=True)
                _cancel(beat, pruning)


async def _follow_edge(
    proc: subprocess.Popen[bytes],
    host: str,
    port: int,
    show_page: Callable[[int], Awaitable[None]],
    stop: asyncio.Event,
    stop_workers: Callable[[], None],
) -> None:
    """Announce the API once it answers; drain the workers and stop if it dies."""
    from api.compose.edge_process import EdgeFailed, wait_ready, watch

    try:
        await wait_ready(proc, host, port)
        await show_page(port)
        code = await watch(proc, stop)
        if code is None:
            return
        problem = f"the API process exited ({code})"
    except EdgeFailed as e:
        problem = str(e)
    if not stop.is_set():
        typer.echo(f"agentbus up: {problem}; stopping", err=True)
        stop_workers()


@run_async
async def worker(
    roles: Annotated[list[Role], typer.Argument(help="The roles to consume.")],
    concurrency: Annotated[int, typer.Option(min=1, help="Steps in flight at once.")] = 1,
    burst: Annotated[bool, typer.Option(help="Drain the streams, then exit.")] = False,
) -> None:
    """Run workers of one or more roles (scale out by starting more of them)."""
    from api.compose.commands import state_store
    from api.compose.connection import connect
    from api.compose.gc_pauses import freeze_startup_heap
    from api.compose.retention import start_retention
    from api.compose.roles import Roles
    from api.compose.workers import build_workers
    from bus.runtime.runner import Runner

    s = settings()
    # Only the retrieval role opens the vector store, and only while it owns it (the
    # embedded one is a folder one process may open: `StoreOwner` waits for it); every
    # other role, the gateway's search_docs included, reaches it over the bus.
    async with state_store(s) as stores, connect(s.bus) as conn:
        handlers = Roles(s, stores, redis=conn.redis)
        workers = build_workers(
            roles, conn.redis, s.bus, handlers, concurrency=concurrency, own_store=True
        )
        beat = _serve_health(s.bus.metrics_port)
        # A burst drains and exits: no background passes in it.
        pruning = None if burst else start_retention(s.bus, stores, conn.redis)
        freeze_startup_heap()
        try:
            await Runner(workers, conn.redis, burst=burst).run()
        finally:
            _cancel(beat, pruning)


def _cancel(*tasks: asyncio.Task[None] | None) -> None:
    """Cancel the process's background tasks (those that were started)."""
    for task in tasks:
        if task is not None:
            task.cancel()


def _serve_health(port: int | None) -> asyncio.Task[None] | None:
    """Serve /metrics, /healthz and /readyz on ``port``; the loop's heartbeat task."""
    if not port:
        return None
    import asyncio

    from bus.runtime import health

    status = health.Health()
    health.serve(port, status)
    status.ready()  # the workers are built and connected; they create their groups first
    return asyncio.create_task(status.beat())
