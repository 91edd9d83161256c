"""``agentbus audit``: read and check the hash-chained audit log (an operator's tools)."""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Annotated

import typer

from api.cli.common import run_async, settings
from api.cli.lazy_coercion import Group

if TYPE_CHECKING:
    from api.app.audit_reads import AuditRowView

app = typer.Typer(cls=Group, help="The gateway's audit log.", no_args_is_help=True)


@app.command("verify")
@run_async
async def verify(
    tenant: Annotated[str | None, typer.Option(help="Check one tenant's chain only.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="The report as JSON.")] = False,
) -> None:
    """Check every row's hash and link; print each chain's state and its first broken row.

    Exit status 1 when a chain is broken. Keep the printed head hashes elsewhere: a head
    rewritten together with the rows before it is only caught against such a copy.
    """
    from api.compose.commands import operator_audit
    from api.compose.errors import ConfigError

    async with operator_audit(settings()) as audit:
        if audit is None:  # open_store always opens it; only a hand-made Stores lacks it
            raise ConfigError("this state store has no audit log")
        check = await audit.verify(tenant)
    if as_json:
        typer.echo(check.document)
    elif check.empty:
        typer.echo("the audit log is empty")
    for line in [] if as_json else check.lines:
        typer.echo(line)
    if not check.ok:
        raise typer.Exit(1)


def _line(row: AuditRowView) -> str:
    args = json.dumps(row.args, ensure_ascii=False)
    return (
        f"{row.seq:>6} {row.created_at.isoformat(timespec='seconds')} {row.subject} "
        f"run={row.run_id or '-'} {row.agent} {row.tool} call={row.call_id or '-'} "
        f"{row.status}/{row.code} {args}" + (f" {row.message}" if row.message else "")
    )


@app.command("list")
@run_async
async def list_rows(
    tenant: Annotated[
        str | None, typer.Option(help="Whose log (default: AGENTBUS_TENANT).")
    ] = None,
    subject: Annotated[
        str | None, typer.Option(help="Only this user's rows (default: every user's).")
    ] = None,
    run_id: Annotated[str | None, typer.Option(help="Only this run's rows.")] = None,
    conversation_id: Annotated[
        str | None, typer.Option(help="Only the rows of this conversation's runs.")
    ] = None,
    before: Annotated[
        int | None, typer.Option(min=1, help="Only rows older than this seq (paging).")
    ] = None,
    limit: Annotated[int, typer.Option(min=1, max=1000, help="The most rows to show.")] = 50,
    as_json: Annotated[bool, typer.Option("--json", help="The rows as JSON lines.")] = False,
) -> None:
    """Show a tenant's audit rows, newest first, arguments redacted.

    Reads the store directly (it needs the database's credentials, like `audit verify`);
    API clients use GET /api/v1/audit, which shows a user only their own rows.
    """
    from agentbus_contracts.ids import RUN_ID_PATTERN
    from api.compose.commands import operator_audit
    from api.compose.errors import ConfigError

    for value, name in ((run_id, "--run-id"), (conversation_id, "--conversation-id")):
        if value is not None and not re.match(RUN_ID_PATTERN, value):
            raise typer.BadParameter(f"{value!r} is not an id", param_hint=name)
    s = settings()
    tenant = tenant or s.api.tenant
    async with operator_audit(s) as audit:
        if audit is None:  # open_store always opens it; only a hand-made Stores lacks it
            raise ConfigError("this state store has no audit log")
        rows = await audit.rows(
            tenant, subject, limit, before, run_id=run_id, conversation_id=conversation_id
        )
    for row in rows:
        if as_json:  # as GET /api/v1/audit lists it
            typer.echo(json.dumps(row.model_dump(mode="json"), ensure_ascii=False))
        else:
            typer.echo(_line(row))
    if not rows and not as_json:
        typer.echo(f"no audit rows for tenant {tenant}")
    elif len(rows) == limit and not as_json:
        typer.echo(f"(more: --before {rows[-1].seq})")
