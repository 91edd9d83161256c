"""Operator commands: streams, dead letters, schemas, database migrations."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Annotated

import typer

from api.cli.common import run_async, settings
from api.compose.connection import connect
from bus import keys, schema
from bus.runtime.deadletter import list_dead_letters, replay
from bus.runtime.groups import group_stats
from bus.store.engine import safe_url
from bus.store.migrate import upgrade_async, wait_for_head

streams_app = typer.Typer(help="Role streams: length, lag and pending per group.")
dlq_app = typer.Typer(help="The dead-letter streams.", no_args_is_help=True)
schema_app = typer.Typer(help="Message JSON Schemas.", no_args_is_help=True)
db_app = typer.Typer(help="The state store.", no_args_is_help=True)


@streams_app.callback(invoke_without_command=True)
@run_async
async def streams(as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """Show every role stream with its groups' lag and pending counts."""
    s = settings()
    async with connect(s.bus) as conn:
        rows = []
        for role in keys.Role:
            for shard in range(s.bus.shards):
                for stream in keys.role_streams(role, shard):
                    rows.extend(await group_stats(conn.redis, stream))
    if as_json:
        for r in rows:
            typer.echo(json.dumps(dataclasses.asdict(r)))
        return
    typer.echo(f"{'stream':40} {'group':12} {'length':>8} {'lag':>8} {'pending':>8} consumers")
    for r in rows:
        typer.echo(
            f"{r.stream:40} {r.group:12} {r.length:>8} {r.lag:>8} {r.pending:>8} {r.consumers:>5}"
        )


@dlq_app.command("list")
@run_async
async def dlq_list(
    count: Annotated[int, typer.Option(min=1)] = 50,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """List dead letters, newest first."""
    s = settings()
    async with connect(s.bus) as conn:
        letters = await list_dead_letters(conn.redis, s.bus, count)
    for dead_id, letter in letters:
        if as_json:
            typer.echo(json.dumps({"id": dead_id, **letter.model_dump()}))
        else:
            typer.echo(
                f"{dead_id}  {letter.role:10} {letter.reason:14} run={letter.run_id} "
                f"deliveries={letter.deliveries}  {letter.error[:80]}"
            )
    if not letters and not as_json:
        typer.echo("no dead letters")


@dlq_app.command("replay")
@run_async
async def dlq_replay(dead_id: Annotated[str, typer.Argument(help="SHARD/ENTRY_ID")]) -> None:
    """Put a dead letter back on its stream (after fixing what made it fail)."""
    s = settings()
    async with connect(s.bus) as conn:
        try:
            new_id = await replay(conn.redis, dead_id)
        except (ValueError, LookupError) as e:
            typer.echo(f"error: {e}", err=True)
            raise typer.Exit(2) from e
    typer.echo(f"replayed {dead_id} as {new_id}")


@schema_app.command("export")
def schema_export(directory: Annotated[Path, typer.Argument(help="Output folder.")]) -> None:
    """Write one JSON Schema file per message type."""
    for path in schema.export(directory):
        typer.echo(str(path))


@db_app.command("upgrade")
@run_async
async def db_upgrade(
    grant_to: Annotated[
        str | None,
        typer.Option(
            help="Postgres: the application's role, granted read/write on the tables "
            "(it owns none, so row-level security applies to it)."
        ),
    ] = None,
) -> None:
    """Apply the state store's migrations (concurrent runs wait for each other)."""
    url = settings().bus.resolved_database_url()
    await upgrade_async(url, grant_to=grant_to)
    typer.echo(f"store at head: {safe_url(url)}")


@db_app.command("wait")
@run_async
async def db_wait(
    seconds: Annotated[float, typer.Option("--timeout", min=0, help="Seconds to wait.")] = 300.0,
) -> None:
    """Wait until the store is migrated to this version's head (exit 2 on timeout)."""
    head = await wait_for_head(settings().bus.resolved_database_url(), seconds)
    typer.echo(f"store at head {head}")
