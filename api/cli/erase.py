"""``agentbus erase``: erase a user's data, as the admin route does (an operator's tool)."""

from __future__ import annotations

from typing import Annotated

import typer

from api.cli.common import run_async, settings

#: Who the tombstone says erased the user when the command line did.
OPERATOR = "operator"


@run_async
async def erase(
    user: Annotated[str, typer.Option("--user", help="The user's id (an API key's subject).")],
    tenant: Annotated[
        str | None, typer.Option(help="The user's tenant (default: AGENTBUS_TENANT).")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="The report as JSON.")] = False,
) -> None:
    """Erase a user's data: conversations, runs, keys, documents, Redis state; audit redacted.

    Their runs in flight are cancelled and waited for first. Prints what was erased per
    kind. Exit status 1 when their steps were still running at the end of the wait (they
    are fenced and their keys gone: erase again).
    """
    from api.app.errors import ApiError
    from api.compose.commands import erasure
    from api.compose.errors import ConfigError

    s = settings()
    tenant = tenant or s.api.tenant
    async with erasure(s) as erasing:
        if erasing is None:  # open_store always opens it; only a hand-made Stores lacks it
            raise ConfigError("this state store cannot erase")
        try:
            report = await erasing.erase(tenant, user, by=OPERATOR)
        except ApiError as e:
            typer.echo(f"error: {e.message}" + (f" ({e.hint})" if e.hint else ""), err=True)
            raise typer.Exit(1) from e
    if as_json:
        typer.echo(report.model_dump_json(indent=2))
        return
    said = ", ".join(f"{kind} {n}" for kind, n in report.erased.items())
    typer.echo(f"erased {user} of {tenant}: {said}")
    typer.echo(f"audit tombstone: seq {report.audit_seq}, user mark {report.subject_digest}")
