"""``agentbus graph show``: the agent graph as Mermaid."""

from __future__ import annotations

from typing import Annotated

import typer

from api.cli.lazy_coercion import Group

app = typer.Typer(cls=Group, help="The agent graph.", no_args_is_help=True)


@app.command("show")
def show(
    mode: Annotated[str, typer.Option(help="single | multi | custom")] = "multi",
    accuracy: Annotated[str, typer.Option(help="standard | accurate")] = "standard",
) -> None:
    """Print the graph of a mode as a Mermaid flowchart."""
    from agents.graph import GRAPHS, mermaid

    if mode not in GRAPHS or accuracy not in ("standard", "accurate"):
        typer.echo(f"error: unknown mode {mode!r} or accuracy {accuracy!r}", err=True)
        raise typer.Exit(2)
    typer.echo(mermaid(mode, accuracy))
