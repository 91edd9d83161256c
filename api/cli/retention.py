"""``agentbus retention``: apply each tenant's retention now, or show the policies."""

from __future__ import annotations

from typing import Annotated

import typer

from api.cli.common import run_async, settings
from api.cli.lazy_coercion import Group

#: Who the tenant's settings say changed them when the command line did.
OPERATOR = "operator"
#: ``bus.retention.MAX_DAYS``, spelled here so that printing the options' range imports no
#: policy model (a test keeps them equal).
MAX_DAYS = 36_500

app = typer.Typer(
    cls=Group, help="Retention: delete what each tenant keeps no longer.", no_args_is_help=True
)


@app.command("run")
@run_async
async def run(
    tenant: Annotated[str | None, typer.Option(help="Only this tenant.")] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Count what would be deleted; delete nothing.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="The report as JSON.")] = False,
) -> None:
    """Run one retention pass now and print what it deleted, per tenant and kind.

    Needs the database's and Redis's credentials (an operator's tool). `agentbus up` and
    the workers run passes every AGENTBUS_RETENTION_INTERVAL_S on their own.
    """
    from api.compose.commands import retention
    from api.compose.errors import ConfigError

    async with retention(settings()) as passes:
        if passes is None:  # open_store always opens it; only a hand-made Stores lacks it
            raise ConfigError("this state store has no retention")
        report = await passes.run(tenant, dry_run=dry_run)
    if as_json:
        typer.echo(report.model_dump_json(indent=2))
        return
    verb = "would delete" if dry_run else "deleted"
    if not report.tenants:
        typer.echo("no tenant has data")
    for name, counts in report.tenants.items():
        said = ", ".join(f"{kind} {n}" for kind, n in counts.items())
        typer.echo(f"{name}: {verb} {said}")


@app.command("show")
@run_async
async def show(
    tenant: Annotated[str | None, typer.Option(help="Only this tenant.")] = None,
) -> None:
    """Print each tenant's policy: days kept per kind (forever where neither the tenant's
    `retention` preference nor AGENTBUS_RETENTION sets one)."""
    from api.compose.commands import retention
    from api.compose.errors import ConfigError
    from bus.retention import KINDS

    async with retention(settings()) as passes:
        if passes is None:
            raise ConfigError("this state store has no retention")
        policies = await passes.policies(tenant)
    for name, policy in policies.items():
        days = {kind: getattr(policy, kind) for kind in KINDS}
        said = ", ".join(f"{k} {'forever' if d is None else f'{d} days'}" for k, d in days.items())
        typer.echo(f"{name}: {said}")
    if not policies:
        typer.echo("no tenant has data")


@app.command("set")
@run_async
async def set_days(
    tenant: Annotated[str, typer.Option(help="The tenant.")],
    runs: Annotated[int | None, typer.Option(min=1, max=MAX_DAYS, help="Days of runs.")] = None,
    messages: Annotated[
        int | None, typer.Option(min=1, max=MAX_DAYS, help="Days of idle conversations.")
    ] = None,
    checkpoints: Annotated[
        int | None, typer.Option(min=1, max=MAX_DAYS, help="Days of ended gates.")
    ] = None,
    blobs: Annotated[int | None, typer.Option(min=1, max=MAX_DAYS, help="Days of blobs.")] = None,
    audit: Annotated[
        int | None, typer.Option(min=1, max=MAX_DAYS, help="Days of audit rows.")
    ] = None,
    default: Annotated[
        list[str] | None,
        typer.Option(help="A kind that takes the deployment's default again (repeatable)."),
    ] = None,
) -> None:
    """Set a tenant's retention preference, as its admin would with PUT /api/v1/settings.

    Kinds not named keep what the tenant had.
    """
    from api.app.auth import local_user
    from api.compose.commands import settings_book
    from bus.retention import KINDS, RetentionPolicy

    given = {"runs": runs, "messages": messages, "checkpoints": checkpoints}
    given |= {"blobs": blobs, "audit": audit}
    unknown = sorted(set(default or []) - set(KINDS))
    if unknown:
        raise typer.BadParameter(f"not a kind: {', '.join(unknown)}", param_hint="--default")
    async with settings_book(settings()) as book:
        prefs = await book.saved(tenant)
        days = dict(prefs.get("retention") or {})
        days |= {kind: n for kind, n in given.items() if n is not None}
        days |= dict.fromkeys(default or [])
        policy = RetentionPolicy.model_validate(days)
        prefs["retention"] = policy.model_dump(exclude_none=True)
        await book.save(local_user(tenant, OPERATOR, admin=True), prefs)
    said = ", ".join(f"{k} {d} days" for k, d in policy.model_dump(exclude_none=True).items())
    typer.echo(f"{tenant}: {said or 'the deployment default for every kind'}")
