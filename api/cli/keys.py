"""``agentbus keys``: create, list and revoke API keys (operator commands, any tenant)."""

from __future__ import annotations

import json
from typing import Annotated, Literal

import typer

from api.cli.common import run_async, settings
from api.cli.lazy_coercion import Group

app = typer.Typer(
    cls=Group, help="API keys: each maps to a tenant, a subject, a role and ACL groups."
)

#: ``KeyRole``'s values (``bus.store``), spelled here so that printing them imports no store (a
#: test keeps them equal).
RoleName = Literal["user", "admin"]


@app.command("create")
@run_async
async def create(
    tenant: Annotated[str, typer.Option(help="The tenant the key acts for.")],
    subject: Annotated[str, typer.Option(help="Who holds it (a user or a system).")],
    role: Annotated[
        RoleName, typer.Option(help="user | admin (admin manages keys, settings).")
    ] = "user",
    name: Annotated[str | None, typer.Option(help="A label to recognise it by.")] = None,
    group: Annotated[
        list[str] | None,
        typer.Option(
            help="An ACL group of the holder (repeatable): its runs read documents "
            "ingested with --acl GROUP."
        ),
    ] = None,
    as_json: Annotated[
        bool,
        typer.Option("--json", help="Print the key, its id and its signing secret as JSON."),
    ] = False,
) -> None:
    """Create a key and print it once (only its digest is stored)."""
    from api.app.errors import InvalidRequest
    from api.compose.commands import operator_keys

    async with operator_keys(settings()) as keys:
        try:
            record = await keys.create(
                tenant, subject, role, name, group or [], with_secret=as_json
            )
        except InvalidRequest as e:
            typer.echo(f"error [invalid_request]: {e.message}", err=True)
            raise typer.Exit(2) from e
    if as_json:
        typer.echo(json.dumps(record.model_dump(mode="json")))
        return
    # Only the key on stdout, so `KEY=$(agentbus keys create ...)` works.
    groups = f" in groups {', '.join(record.groups)}" if record.groups else ""
    typer.echo(
        f"key {record.id}: {record.role.value} of tenant {tenant!r} for {subject!r}{groups}; "
        "shown once, store it now:",
        err=True,
    )
    typer.echo(record.key)


@app.command("list")
@run_async
async def list_keys(
    tenant: Annotated[str | None, typer.Option(help="Only this tenant's keys.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object per line.")] = False,
) -> None:
    """List keys (never the keys themselves)."""
    from api.compose.commands import operator_keys

    async with operator_keys(settings()) as keys:
        records = await keys.list(tenant)
    for r in records:
        if as_json:
            typer.echo(json.dumps(r.model_dump(mode="json")))
            continue
        state = f"revoked {r.revoked_at:%Y-%m-%d %H:%M}" if r.revoked_at else "active"
        typer.echo(
            f"{r.id}  {r.tenant_id:16} {r.subject:16} {r.role.value:6} {state:24} "
            f"{','.join(r.groups) or '-':16} {r.name or ''}"
        )
    if not records and not as_json:
        typer.echo("no keys")


@app.command("revoke")
@run_async
async def revoke(
    key_id: Annotated[str, typer.Argument(help="The key id (from `keys list`).")],
) -> None:
    """Revoke a key; no API process accepts it once this returns."""
    from api.app.auth import VERSIONED_KEY_CACHE_S
    from api.compose.key_revocation import revoke_key

    record, told = await revoke_key(settings(), key_id)
    if record is None:
        typer.echo(f"error [key_not_found]: no key {key_id!r}; see `agentbus keys list`", err=True)
        raise typer.Exit(2)
    typer.echo(f"revoked {record.id} ({record.role.value} of tenant {record.tenant_id!r})")
    if not told:
        typer.echo(
            f"warning: Redis is unreachable; running API processes may accept the key for "
            f"up to {VERSIONED_KEY_CACHE_S:.0f} s",
            err=True,
        )
