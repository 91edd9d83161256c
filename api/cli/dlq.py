"""``agentbus dlq``: list and replay dead letters."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from api.cli.common import run_async, settings
from api.cli.lazy_coercion import Group

app = typer.Typer(cls=Group, help="The dead-letter streams.", no_args_is_help=True)


@app.command("list")
@run_async
async def dlq_list(
    count: Annotated[int, typer.Option(min=1)] = 50,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """List dead letters, newest first."""
    from api.compose.connection import connect
    from bus.runtime.deadletter import list_dead_letters

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


@app.command("replay")
@run_async
async def dlq_replay(dead_id: Annotated[str, typer.Argument(help="SHARD/ENTRY_ID")]) -> None:
    """Put a dead letter back on its stream (after fixing what made it fail)."""
    from api.compose.connection import connect
    from bus.runtime.deadletter import replay

    s = settings()
    async with connect(s.bus) as conn:
        try:
            new_id = await replay(conn.redis, dead_id)
        except (ValueError, LookupError) as e:
            typer.echo(f"error: {e}", err=True)
            raise typer.Exit(2) from e
    typer.echo(f"replayed {dead_id} as {new_id}")
