"""``agentbus backup DIR`` and ``agentbus restore DIR``: the embedded defaults, copied and
brought back (see docs/backup.md)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from api.cli.common import run_async, settings

if TYPE_CHECKING:
    from api.backup.manifest import Manifest
    from api.backup.restore import Restored


def _size(n: int) -> str:
    size, unit = float(n), "B"
    for bigger in ("KB", "MB", "GB"):
        if size < 1024:
            break
        size, unit = size / 1024, bigger
    return f"{n} B" if unit == "B" else f"{size:.1f} {unit}"


def _summary(m: Manifest) -> list[str]:
    store = m.entry("store.db")
    redis = m.entry("redis.rdb")
    return [
        f"  SQLite store   {_size(store.bytes if store else 0)}, migration {m.sql_revision}",
        f"  Redis          {_size(redis.bytes if redis else 0)} RDB image "
        f"(Redis {m.redis_version})",
        f"  vector store   {m.vector_points} points in {m.collection!r} "
        f"(Qdrant Edge {m.qdrant_edge_version})",
    ]


@run_async
async def backup(
    folder: Annotated[Path, typer.Argument(help="Where to write the backup (new or empty).")],
    force: Annotated[
        bool, typer.Option("--force", help="Replace a backup already in the folder.")
    ] = False,
    wait: Annotated[
        float,
        typer.Option(
            min=1, help="Seconds the process owning the vector store may take to copy it."
        ),
    ] = 120.0,
) -> None:
    """Back up the embedded Redis, vector store and SQLite store, while `up` runs or not."""
    from api.backup.take import take_backup

    m = await take_backup(settings(), folder, force=force, wait_s=wait)
    typer.echo(
        f"backed up {m.data_dir} to {folder.resolve()} at {m.created_at:%Y-%m-%dT%H:%M:%SZ}:"
    )
    for line in _summary(m):
        typer.echo(line)
    typer.echo(f"  {len(m.files)} files, {_size(m.total_bytes)}, checksums in manifest.json")


@run_async
async def restore(
    folder: Annotated[Path, typer.Argument(help="A folder `agentbus backup` wrote.")],
) -> None:
    """Restore a backup into the data folder (stop `up` first); the replaced data is kept."""
    from api.backup.restore import restore_backup

    done: Restored = await restore_backup(settings(), folder)
    m = done.manifest
    typer.echo(
        f"restored the backup of {m.created_at:%Y-%m-%dT%H:%M:%SZ} (agentbus "
        f"{m.agentbus_version}) into {done.where.data_dir}:"
    )
    for line in _summary(m):
        typer.echo(line)
    typer.echo(f"  Redis holds {done.redis_keys} keys")
    if m.sql_revision != done.head:
        typer.echo(f"migrated the store from {m.sql_revision} to {done.head}")
    if done.replayed:
        typer.echo(f"erased again {done.replayed} user(s) erased after the backup began")
    if done.aside is not None:
        typer.echo(f"the data it replaced is in {done.aside}")
    typer.echo("start it with `agentbus up`")
