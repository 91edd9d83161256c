"""``agentbus teams``: the CLI tenant's teams (``AGENTBUS_TENANT``): apply a YAML or JSON
file, list, show, draw, delete.

The commands write the state store directly, as an admin of the tenant would through
``/api/v1/teams``; a team is checked the same way first, and an invalid one prints each
fault with its JSON pointer and exits 2.
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from api.cli.common import run_async, settings
from api.cli.lazy_coercion import Group

if TYPE_CHECKING:
    from api.app.teams import TeamBook

app = typer.Typer(
    cls=Group,
    help="Teams: agents and their hand-offs, declared as documents.",
    no_args_is_help=True,
)


@asynccontextmanager
async def _book() -> AsyncGenerator[tuple[TeamBook, str, str]]:
    from api.app.errors import ApiError, TeamRefused
    from api.compose.commands import team_book

    s = settings()
    async with team_book(s) as book:
        if book is None:
            typer.echo("error [unavailable]: teams need the state store", err=True)
            raise typer.Exit(2)
        try:
            yield book, s.api.tenant, s.api.subject
        except TeamRefused as e:
            typer.echo(f"error [{e.code}]: the team was not stored", err=True)
            for fault in e.faults:
                typer.echo(f"  {fault['pointer'] or '/'}  {fault['code']}: {fault['message']}")
            sys.exit(2)
        except ApiError as e:
            typer.echo(f"error [{e.code}]: {e.message}", err=True)
            sys.exit(2)


@app.command("apply")
@run_async
async def apply(
    file: Annotated[Path, typer.Argument(help="The team, as YAML or JSON.", exists=True)],
    name: Annotated[
        str | None, typer.Option(help="Store it under this name (default: its `name`).")
    ] = None,
) -> None:
    """Check a team and store it as its next version; print its name and version."""
    text = file.read_text()
    async with _book() as (book, tenant, subject):
        record = await book.apply(tenant, name or _named(text) or file.stem, text, subject)
    typer.echo(f"{record.name} version {record.version}")


def _named(text: str) -> str | None:
    from agents.teams.faults import TeamInvalid
    from agents.teams.parse import parse_team

    try:
        return parse_team(text).name
    except TeamInvalid:
        return None  # the book names the faults


@app.command("list")
@run_async
async def list_teams() -> None:
    """The tenant's teams (and the shipped modes, version 0)."""
    async with _book() as (book, tenant, _):
        for r in await book.list(tenant):
            described = str(r.document.get("description") or "")
            typer.echo(f"{r.name}  version {r.version}  {described}")


@app.command("show")
@run_async
async def show(
    name: Annotated[str, typer.Argument(help="The team.")],
    version: Annotated[int | None, typer.Option(help="A version (default: the latest).")] = None,
    graph: Annotated[bool, typer.Option("--graph", help="Print it as Mermaid.")] = False,
) -> None:
    """A team's document as JSON, or its graph as Mermaid."""
    async with _book() as (book, tenant, _):
        if graph:
            typer.echo(await book.mermaid(tenant, name, version))
            return
        record = await book.get(tenant, name, version)
    typer.echo(json.dumps(record.model_dump(mode="json"), indent=2))


@app.command("delete")
@run_async
async def delete(name: Annotated[str, typer.Argument(help="The team.")]) -> None:
    """Delete a team (runs in flight finish on their version)."""
    async with _book() as (book, tenant, _):
        await book.delete(tenant, name)
    typer.echo(f"deleted {name}")
