"""``agentbus audit``: check the gateway's hash-chained audit log."""

from __future__ import annotations

from typing import Annotated

import typer

from api.cli.common import run_async, settings
from api.compose.roles import ConfigError
from bus.store import ChainReport, open_store

audit_app = typer.Typer(help="The gateway's audit log.", no_args_is_help=True)


def _describe(chain: ChainReport) -> list[str]:
    if chain.broken is None:
        return [f"{chain.tenant_id}: ok, {chain.rows} rows, head {chain.head_hash}"]
    broken = chain.broken
    where = f"row id {broken.row_id} (seq {broken.seq})" if broken.row_id else f"seq {broken.seq}"
    lines = [f"{chain.tenant_id}: BROKEN at {where} after {chain.rows} good rows: {broken.reason}"]
    if broken.record is not None:
        r = broken.record
        lines.append(
            f"    {r.created_at.isoformat()} run={r.run_id} agent={r.agent} tool={r.tool} "
            f"call={r.call_id} status={r.status} code={r.code}"
        )
    return lines


@audit_app.command("verify")
@run_async
async def verify(
    tenant: Annotated[str | None, typer.Option(help="Check one tenant's chain only.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="The report as JSON.")] = False,
) -> None:
    """Check every row's hash and link; print each chain's state and its first broken row.

    Exit status 1 when a chain is broken. Keep the printed head hashes elsewhere: a head
    rewritten together with the rows before it is only caught against such a copy.
    """
    s = settings()
    async with open_store(s.bus) as stores:
        if stores.audit is None:  # open_store always opens it; only a hand-made Stores lacks it
            raise ConfigError("this state store has no audit log")
        report = await stores.audit.verify(tenant)
    if as_json:
        typer.echo(report.model_dump_json(indent=2))
    elif not report.chains:
        typer.echo("the audit log is empty")
    for chain in [] if as_json else report.chains:
        for line in _describe(chain):
            typer.echo(line)
    if not report.ok:
        raise typer.Exit(1)
