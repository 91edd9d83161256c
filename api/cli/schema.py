"""``agentbus schema``: the messages' JSON Schemas."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from api.cli.lazy_coercion import Group

app = typer.Typer(cls=Group, help="Message JSON Schemas.", no_args_is_help=True)


@app.command("export")
def schema_export(directory: Annotated[Path, typer.Argument(help="Output folder.")]) -> None:
    """Write one JSON Schema file per message type."""
    from bus import schema

    for path in schema.export(directory):
        typer.echo(str(path))
