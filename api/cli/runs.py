"""``agentbus runs resume``: decide a paused run's gate from the command line."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from api.cli.common import cli_groups, run_async, settings
from api.cli.lazy_coercion import Group

app = typer.Typer(cls=Group, help="Runs: resume a paused run.", no_args_is_help=True)

#: The decisions a gate takes (``agents.gates``'s answer and egress decisions), and
#: ``more_info``; spelled here so that printing them imports no gate (a test keeps them equal).
DECISIONS = sorted(
    {"approve", "reject", "egress_allow_once", "egress_allow_always", "egress_deny", "more_info"}
)


@app.command("resume")
@run_async
async def resume(
    run_id: Annotated[str, typer.Argument(help="The paused run.")],
    decision: Annotated[str, typer.Argument(help=" | ".join(DECISIONS))],
) -> None:
    """Resume a run paused at a gate (as the CLI's tenant and subject)."""
    from api.app.auth import local_user
    from api.compose.commands import resumes

    s = settings()
    me = local_user(s.api.tenant, s.api.subject)
    async with resumes(s) as resuming:
        if decision == "more_info":
            info = await resuming.more_info(me.scope, run_id)
            typer.echo(json.dumps(info, indent=2))
            return
        await resuming.decide(me.scope, cli_groups(s), run_id, decision)
    typer.echo(f"resumed {run_id}: {decision}")
