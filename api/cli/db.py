"""``agentbus db``: migrate the state store, or wait until it is migrated."""

from __future__ import annotations

from typing import Annotated

import typer

from api.cli.common import run_async, settings
from api.cli.lazy_coercion import Group

app = typer.Typer(cls=Group, help="The state store.", no_args_is_help=True)


@app.command("upgrade")
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
    from bus.store.engine import safe_url
    from bus.store.migrate import upgrade_async

    url = settings().bus.resolved_database_url()
    await upgrade_async(url, grant_to=grant_to)
    typer.echo(f"store at head: {safe_url(url)}")


@app.command("wait")
@run_async
async def db_wait(
    seconds: Annotated[float, typer.Option("--timeout", min=0, help="Seconds to wait.")] = 300.0,
) -> None:
    """Wait until the store is migrated to this version's head or a later release's (exit 2
    on timeout)."""
    from bus.store.migrate import wait_for_head

    head = await wait_for_head(settings().bus.resolved_database_url(), seconds)
    typer.echo(f"store at head {head}")
