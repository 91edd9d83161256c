"""The ``agentbus`` command line."""

from __future__ import annotations

import asyncio
import subprocess
from collections.abc import Awaitable, Callable
from typing import Annotated

import typer

from api.cli import (
    api_cmd,
    api_keys_cmd,
    ask,
    audit_cmds,
    bench,
    deploy_cmd,
    eval_answers,
    eval_judges,
    graph_cmd,
    ops,
    page_cmd,
    retrieval_cmds,
    runs_cmd,
    tools_cmds,
)
from api.cli.common import run_async, settings
from api.compose.connection import connect
from api.compose.edge_process import (
    EdgeFailed,
    edge_process,
    free_port,
    stop_edge,
    wait_ready,
    watch,
)
from api.compose.gc_pauses import freeze_startup_heap
from api.compose.local_key import ensure_local_key, local_key_message
from api.compose.processes import helper_processes, helper_roles
from api.compose.roles import UP_ROLES, Roles
from api.compose.workers import build_workers
from bus.keys import Role
from bus.runtime import health
from bus.runtime.runner import Runner
from bus.store import open_store

app = typer.Typer(no_args_is_help=True, help="agentbus: multi-agent question answering on Redis.")
app.add_typer(ops.streams_app, name="streams")
app.add_typer(ops.dlq_app, name="dlq")
app.add_typer(ops.schema_app, name="schema")
app.add_typer(ops.db_app, name="db")
app.add_typer(bench.app, name="bench")
app.add_typer(deploy_cmd.app, name="deploy")
app.add_typer(graph_cmd.app, name="graph")
app.add_typer(runs_cmd.app, name="runs")
app.add_typer(retrieval_cmds.eval_app, name="eval")
retrieval_cmds.eval_app.command("answers")(eval_answers.eval_answers)
retrieval_cmds.eval_app.command("judges")(eval_judges.eval_judges)
app.command()(retrieval_cmds.ingest)
bench.app.command("retrieval")(retrieval_cmds.bench_retrieval)
app.add_typer(api_keys_cmd.app, name="keys")
app.add_typer(tools_cmds.tools_app, name="tools")
app.add_typer(audit_cmds.audit_app, name="audit")


app.command()(ask.ask)
app.command(name="api")(api_cmd.api)
app.command(name="login-url")(page_cmd.login_url_cmd)


@app.command()
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
    s = settings()
    async with (
        open_store(s.bus, migrate=True) as stores,
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
        stop = asyncio.Event()
        helpers = helper_roles(s.retrieval, UP_ROLES)

        async def show_page(port: int) -> None:
            url = await page_cmd.page_login_url(
                s.api, conn.redis, stores.keys, host=s.api.api_host, port=port
            )
            typer.echo(f"api: http://{s.api.api_host}:{port}/docs  (Ctrl-C to stop)")
            typer.echo(page_cmd.page_message(url))

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
                if beat is not None:
                    beat.cancel()


async def _follow_edge(
    proc: subprocess.Popen[bytes],
    host: str,
    port: int,
    show_page: Callable[[int], Awaitable[None]],
    stop: asyncio.Event,
    stop_workers: Callable[[], None],
) -> None:
    """Announce the API once it answers; drain the workers and stop if it dies."""
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


@app.command()
@run_async
async def worker(
    roles: Annotated[list[Role], typer.Argument(help="The roles to consume.")],
    concurrency: Annotated[int, typer.Option(min=1, help="Steps in flight at once.")] = 1,
    burst: Annotated[bool, typer.Option(help="Drain the streams, then exit.")] = False,
) -> None:
    """Run workers of one or more roles (scale out by starting more of them)."""
    s = settings()
    # Only the retrieval role opens the vector store, and only while it owns it (the
    # embedded one is a folder one process may open: `StoreOwner` waits for it); every
    # other role, the gateway's search_docs included, reaches it over the bus.
    async with open_store(s.bus) as stores, connect(s.bus) as conn:
        handlers = Roles(s, stores, redis=conn.redis)
        workers = build_workers(
            roles, conn.redis, s.bus, handlers, concurrency=concurrency, own_store=True
        )
        beat = _serve_health(s.bus.metrics_port)
        freeze_startup_heap()
        try:
            await Runner(workers, conn.redis, burst=burst).run()
        finally:
            if beat is not None:
                beat.cancel()


def _serve_health(port: int | None) -> asyncio.Task[None] | None:
    """Serve /metrics, /healthz and /readyz on ``port``; the loop's heartbeat task."""
    if not port:
        return None
    status = health.Health()
    health.serve(port, status)
    status.ready()  # the workers are built and connected; they create their groups first
    return asyncio.create_task(status.beat())
