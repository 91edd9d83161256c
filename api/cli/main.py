"""The ``agentbus`` command line."""

from __future__ import annotations

import asyncio
from typing import Annotated

import typer
from prometheus_client import start_http_server

from api import bootstrap
from api.cli import (
    api_cmd,
    ask,
    audit_cmds,
    bench,
    graph_cmd,
    keys_cmd,
    ops,
    retrieval_cmds,
    runs_cmd,
    tools_cmds,
)
from api.cli.common import run_async, settings
from api.helpers import helper_processes, helper_roles
from api.local_key import ensure_local_key, local_key_message
from api.server import run_edge
from bus.keys import Role
from bus.runtime.runner import Runner

app = typer.Typer(no_args_is_help=True, help="agentbus: multi-agent question answering on Redis.")
app.add_typer(ops.streams_app, name="streams")
app.add_typer(ops.dlq_app, name="dlq")
app.add_typer(ops.schema_app, name="schema")
app.add_typer(ops.db_app, name="db")
app.add_typer(bench.app, name="bench")
app.add_typer(graph_cmd.app, name="graph")
app.add_typer(runs_cmd.app, name="runs")
app.add_typer(retrieval_cmds.eval_app, name="eval")
app.command()(retrieval_cmds.ingest)
bench.app.command("retrieval")(retrieval_cmds.bench_retrieval)
app.add_typer(keys_cmd.app, name="keys")
app.add_typer(tools_cmds.tools_app, name="tools")
app.add_typer(audit_cmds.audit_app, name="audit")


app.command()(ask.ask)
app.command(name="api")(api_cmd.api)


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
        bootstrap.open_store(s, migrate=True) as stores,
        bootstrap.connect(s, embedded=True) as conn,
        bootstrap.maybe_retrieval(s, True) as retrieval,
    ):
        roles = bootstrap.Roles(s, stores, retrieval=retrieval, redis=conn.redis)
        workers = bootstrap.build_workers(
            bootstrap.UP_ROLES, conn.redis, s, roles, concurrency=concurrency
        )
        for w in workers:  # before anyone is told to publish: a new group starts at "$"
            await w.ensure_groups()
        typer.echo(f"agentbus up: redis {conn.url}, store {s.resolved_database_url()}")
        n = processes
        typer.echo(f"llm: {s.llm}; roles: {', '.join(bootstrap.UP_ROLES)}; processes: {n}")
        typer.echo('try: agentbus ask "What is 23 × 19?"')
        key = await ensure_local_key(s, stores.keys)  # first start only
        if key:
            typer.echo(local_key_message(key, s))
        typer.echo(f"api: http://{s.api_host}:{s.api_port}/docs  (Ctrl-C to stop)")
        _serve_metrics(s.metrics_port)
        stop = asyncio.Event()
        helpers = helper_roles(s, bootstrap.UP_ROLES)
        with helper_processes(n - 1, helpers, conn.url, concurrency):
            edge = asyncio.create_task(run_edge(s, conn.redis, stores, stop))
            try:
                await Runner(workers, conn.redis).run()  # owns SIGTERM/SIGINT: drain, stop
            finally:
                stop.set()
                await edge


@app.command()
@run_async
async def worker(
    roles: Annotated[list[Role], typer.Argument(help="The roles to consume.")],
    concurrency: Annotated[int, typer.Option(min=1, help="Steps in flight at once.")] = 1,
    burst: Annotated[bool, typer.Option(help="Drain the streams, then exit.")] = False,
) -> None:
    """Run workers of one or more roles (scale out by starting more of them)."""
    s = settings()
    # Only the retrieval role opens the vector store (the embedded one is a folder one
    # process owns); every other role, the gateway's search_docs included, asks it over
    # the bus.
    async with (
        bootstrap.open_store(s) as stores,
        bootstrap.connect(s) as conn,
        bootstrap.maybe_retrieval(s, Role.RETRIEVAL in roles) as retrieval,
    ):
        handlers = bootstrap.Roles(s, stores, retrieval=retrieval, redis=conn.redis)
        workers = bootstrap.build_workers(roles, conn.redis, s, handlers, concurrency=concurrency)
        _serve_metrics(s.metrics_port)
        await Runner(workers, conn.redis, burst=burst).run()


def _serve_metrics(port: int | None) -> None:
    if port:
        start_http_server(port)
