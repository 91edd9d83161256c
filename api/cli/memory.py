"""``agentbus memory``: the CLI subject's long-term memories (list, edit, delete), as the
CLI's tenant and subject (``AGENTBUS_TENANT``, ``AGENTBUS_SUBJECT``), in the state store.
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Annotated

import typer

from api.cli.common import cli_groups, run_async, settings
from api.cli.lazy_coercion import Group

if TYPE_CHECKING:
    from agentbus_contracts import Memory
    from api.app.auth import Principal
    from api.app.memories import MemoryBook

app = typer.Typer(
    cls=Group,
    help="Long-term memories: what you said about yourself, given to runs as notes.",
    no_args_is_help=True,
)


@asynccontextmanager
async def _book() -> AsyncGenerator[tuple[MemoryBook, Principal]]:
    from api.app.auth import local_user
    from api.app.errors import ApiError
    from api.compose.commands import memory_book

    s = settings()
    me = local_user(s.api.tenant, s.api.subject, cli_groups(s))
    async with memory_book(s) as book:
        if book is None:
            raise typer.Exit(2)
        try:
            yield book, me
        except ApiError as e:
            typer.echo(f"error [{e.code}]: {e.message}", err=True)
            sys.exit(2)


def _line(m: Memory) -> str:
    edited = " (edited)" if m.edited else ""
    return f"{m.id}  {m.topic}: {m.text}{edited}"


def _doc(m: Memory) -> str:
    return json.dumps(m.model_dump(mode="json"))  # as GET /api/v1/memories lists it


@app.command("list")
@run_async
async def list_memories(
    as_json: Annotated[bool, typer.Option("--json", help="One JSON document per line.")] = False,
) -> None:
    """Your memories, the most recently changed first."""
    async with _book() as (book, me):
        found = await book.list(me)
    for m in found:
        typer.echo(_doc(m) if as_json else _line(m))


@app.command("edit")
@run_async
async def edit(
    memory_id: Annotated[str, typer.Argument(help="The memory (from `agentbus memory list`).")],
    text: Annotated[str, typer.Argument(help="Its new text, 1 to 500 characters.")],
) -> None:
    """Change the text of one of your memories."""
    async with _book() as (book, me):
        record = await book.edit(me, memory_id, text)
    typer.echo(_line(record))


@app.command("delete")
@run_async
async def delete(
    memory_id: Annotated[str, typer.Argument(help="The memory (from `agentbus memory list`).")],
) -> None:
    """Delete one of your memories: no run is given it again."""
    async with _book() as (book, me):
        await book.delete(me, memory_id)
    typer.echo(f"deleted {memory_id}")
