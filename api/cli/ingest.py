"""``agentbus ingest``: chunk, embed and store documents for search_docs.

Local Qdrant locks its folder to one process, so in embedded mode ``ingest`` never opens
it: it parses and chunks the files here, publishes the batches onto the retrieval stream
and follows the job while ``agentbus up`` (or ``agentbus worker retrieval``) stores them.
With ``AGENTBUS_QDRANT_URL`` set (a server) it ingests in this process instead. The work is
in ``api/cli/ingest_run.py``, imported when the command runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from api.cli.common import run_async


@run_async
async def ingest(
    paths: Annotated[list[Path], typer.Argument(help="Files or folders (.md .txt .html .pdf).")],
    tenant: Annotated[
        str | None, typer.Option(help="Owner tenant (default AGENTBUS_TENANT).")
    ] = None,
    acl: Annotated[
        list[str] | None, typer.Option(help="A group that may read them (repeatable; none = all).")
    ] = None,
    direct: Annotated[
        bool, typer.Option(help="Open the store here even in local mode (no `up` running).")
    ] = False,
    deadline: Annotated[float, typer.Option(min=1, help="Seconds the job may take.")] = 3600,
    as_json: Annotated[
        bool, typer.Option("--json", help="One JSON line, no progress bar.")
    ] = False,
) -> None:
    """Ingest documents: chunk, embed and store them for search_docs (idempotent)."""
    from api.cli.ingest_run import run

    await run(paths, tenant=tenant, acl=acl, direct=direct, deadline=deadline, as_json=as_json)
