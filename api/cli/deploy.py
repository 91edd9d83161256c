"""``agentbus deploy``: write the generated deployment files."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from api.cli import manifests
from api.cli.lazy_coercion import Group

app = typer.Typer(cls=Group, help="Deployment files.", no_args_is_help=True)


@app.command("k8s")
def k8s(
    shards: Annotated[int, typer.Option(min=1, max=1024, help="AGENTBUS_SHARDS.")] = 1,
    out: Annotated[Path, typer.Option(help="Folder of the manifests.")] = Path("deploy/k8s"),
    prometheus_url: Annotated[
        str,
        typer.Option(
            help="The Prometheus KEDA reads agentbus_fair_waiting_runs from (the researchers "
            "scale on the runs fair admission holds back)."
        ),
    ] = manifests.PROMETHEUS_URL,
) -> None:
    """Write workers.yaml and keda.yaml (every role, scalers summed over the shards)."""
    for name, text in (
        ("workers.yaml", manifests.workers_yaml(shards)),
        ("keda.yaml", manifests.keda_yaml(shards, prometheus_url)),
    ):
        path = out / name
        path.write_text(text)
        typer.echo(str(path))
