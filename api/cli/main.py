"""The ``agentbus`` command line."""

from __future__ import annotations

from typing import Annotated

import typer
from prometheus_client import start_http_server

from api import bootstrap
from api.cli import ask, bench, ops
from api.cli.common import run_async, settings
from bus.keys import Role
from bus.runtime.runner import Runner

app = typer.Typer(no_args_is_help=True, help="agentbus: multi-agent question answering on Redis.")
app.add_typer(ops.streams_app, name="streams")
app.add_typer(ops.dlq_app, name="dlq")
app.add_typer(ops.schema_app, name="schema")
app.add_typer(ops.db_app, name="db")
app.add_typer(bench.app, name="bench")


app.command()(ask.ask)


@app.command()
@run_async
async def up(
    concurrency: Annotated[int, typer.Option(min=1, help="Steps in flight per role.")] = 8,
) -> None:
    """Start the whole system in one process on embedded defaults (Ctrl-C stops it)."""
    s = settings()
    async with (
        bootstrap.open_store(s, migrate=True) as stores,
        bootstrap.connect(s, embedded=True) as conn,
    ):
        roles = bootstrap.Roles(s, stores)
        workers = bootstrap.build_workers(
            bootstrap.UP_ROLES, conn.redis, s, roles, concurrency=concurrency
        )
        typer.echo(f"agentbus up: redis {conn.url}, store {s.resolved_database_url()}")
        typer.echo(f"llm: {s.llm}; roles: {', '.join(bootstrap.UP_ROLES)}  (Ctrl-C to stop)")
        typer.echo('try: agentbus ask "What is 23 × 19?"')
        _serve_metrics(s.metrics_port)
        await Runner(workers, conn.redis).run()


@app.command()
@run_async
async def worker(
    role: Annotated[Role, typer.Argument(help="The role to consume.")],
    concurrency: Annotated[int, typer.Option(min=1, help="Steps in flight at once.")] = 1,
    burst: Annotated[bool, typer.Option(help="Drain the streams, then exit.")] = False,
) -> None:
    """Run one role's worker (scale out by starting more of them)."""
    s = settings()
    async with bootstrap.open_store(s) as stores, bootstrap.connect(s) as conn:
        roles = bootstrap.Roles(s, stores)
        workers = bootstrap.build_workers([role], conn.redis, s, roles, concurrency=concurrency)
        _serve_metrics(s.metrics_port)
        await Runner(workers, conn.redis, burst=burst).run()


def _serve_metrics(port: int | None) -> None:
    if port:
        start_http_server(port)
