"""``agentbus schedules``: questions asked on a cron schedule (add, list, pause, resume,
delete), as the CLI's tenant and subject (``AGENTBUS_TENANT``, ``AGENTBUS_SUBJECT``).

The commands write the state store; the scheduler of every running API (``agentbus up``,
``agentbus api``) starts the runs. A schedule added here acts with the CLI's groups
(``AGENTBUS_GROUPS``); its settings are checked by each tick's run start.
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Annotated, Any, Literal

import typer

from api.cli.common import cli_groups, run_async, settings
from api.cli.lazy_coercion import Group

if TYPE_CHECKING:
    from agentbus_contracts.schedules import ScheduledQuestion
    from api.app.auth import Principal
    from api.app.schedules import ScheduleBook

app = typer.Typer(
    cls=Group, help="Scheduled questions: asked on a cron schedule.", no_args_is_help=True
)


@asynccontextmanager
async def _book() -> AsyncGenerator[tuple[ScheduleBook, Principal]]:
    from api.app.auth import local_user
    from api.app.errors import ApiError
    from api.compose.commands import schedule_book

    s = settings()
    me = local_user(s.api.tenant, s.api.subject, cli_groups(s))
    async with schedule_book(s) as book:
        if book is None:
            raise typer.Exit(2)
        try:
            yield book, me
        except ApiError as e:
            typer.echo(f"error [{e.code}]: {e.message}", err=True)
            sys.exit(2)


def _line(r: ScheduledQuestion) -> str:
    state = "paused" if r.paused else f"next {r.next_run_at.isoformat()}"
    return f"{r.id}  {r.cron!r} {r.timezone}  {state}  {r.question[:60]}"


def _doc(r: ScheduledQuestion) -> dict[str, Any]:
    return r.model_dump(mode="json")  # as GET /api/v1/schedules lists it


@app.command("add")
@run_async
async def add(
    cron: Annotated[str, typer.Argument(help="Five fields, e.g. '0 8 * * MON-FRI'.")],
    question: Annotated[str, typer.Argument(help="The question every tick asks.")],
    timezone: Annotated[str, typer.Option(help="An IANA time zone.")] = "UTC",
    missed: Annotated[
        str, typer.Option(help="skip | run_once: ticks missed while nothing ran.")
    ] = "skip",
    mode: Annotated[str | None, typer.Option(help="single | multi | custom")] = None,
    accuracy: Annotated[str | None, typer.Option(help="standard | accurate (multi)")] = None,
    webhook_url: Annotated[
        str | None, typer.Option(help="POST each run's result here, signed.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the schedule as JSON.")] = False,
) -> None:
    """Add a schedule; print its id (its runs land in its own conversation)."""
    from agentbus_contracts.questions import QuestionSettings
    from api.app.schedules import NewSchedule, view_of

    if missed not in ("skip", "run_once"):
        typer.echo("error [invalid_request]: --missed is skip or run_once", err=True)
        raise typer.Exit(2)
    policy: Literal["skip", "run_once"] = "run_once" if missed == "run_once" else "skip"
    try:
        chosen = QuestionSettings.model_validate({"mode": mode, "accuracy": accuracy})
    except ValueError as e:
        typer.echo(f"error [invalid_request]: {e}", err=True)
        raise typer.Exit(2) from e
    new = NewSchedule(cron, timezone, question, chosen, webhook_url, policy)
    async with _book() as (book, me):
        record = view_of(await book.add(me, new, bind_key=False))
    typer.echo(json.dumps(_doc(record)) if as_json else record.id)


@app.command("list")
@run_async
async def list_schedules(
    as_json: Annotated[bool, typer.Option("--json", help="One JSON document per line.")] = False,
) -> None:
    """The CLI subject's schedules, the newest first."""
    from api.app.schedules import view_of

    async with _book() as (book, me):
        found = [view_of(r) for r in await book.list(me)]
    for record in found:
        typer.echo(json.dumps(_doc(record)) if as_json else _line(record))


@app.command("pause")
@run_async
async def pause(schedule_id: Annotated[str, typer.Argument(help="The schedule.")]) -> None:
    """Pause a schedule: no tick runs until it is resumed."""
    from api.app.schedules import view_of

    async with _book() as (book, me):
        record = view_of(await book.pause(me, schedule_id, paused=True))
    typer.echo(_line(record))


@app.command("resume")
@run_async
async def resume(schedule_id: Annotated[str, typer.Argument(help="The schedule.")]) -> None:
    """Resume a schedule at its next tick after now."""
    from api.app.schedules import view_of

    async with _book() as (book, me):
        record = view_of(await book.pause(me, schedule_id, paused=False))
    typer.echo(_line(record))


@app.command("delete")
@run_async
async def delete(schedule_id: Annotated[str, typer.Argument(help="The schedule.")]) -> None:
    """Delete a schedule (its conversation and runs stay)."""
    async with _book() as (book, me):
        await book.delete(me, schedule_id)
    typer.echo(f"deleted {schedule_id}")
