"""``agentbus streams``: each role stream with its groups' lag and pending counts."""

from __future__ import annotations

import dataclasses
import json
from typing import TYPE_CHECKING, Annotated

import typer

from api.cli.common import run_async, settings
from api.cli.lazy_coercion import Group

if TYPE_CHECKING:
    from bus.runtime.groups import GroupStats

app = typer.Typer(cls=Group, help="Role streams: length, lag and pending per group.")


@app.callback(invoke_without_command=True)
@run_async
async def streams(as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """Show every role stream with its groups' lag and pending counts."""
    from api.compose.connection import connect
    from bus import keys
    from bus.runtime.groups import group_stats

    s = settings()
    async with connect(s.bus) as conn:
        rows: list[GroupStats] = []
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
