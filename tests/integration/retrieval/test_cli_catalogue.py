"""`agentbus ingest` lists what it ingested in the web page's documents catalogue."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from api.cli import ingest as ingest_cmd
from api.compose.settings import AppSettings
from bus.store import open_store, upgrade_async

app = typer.Typer()
app.command()(ingest_cmd.ingest)
app.command("noop")(lambda: None)  # a second command keeps `ingest` a subcommand


async def _listed(settings: AppSettings) -> list[tuple[str, list[str], str]]:
    async with open_store(settings.bus) as stores:
        assert stores.documents is not None
        rows = await stores.documents.list(settings.api.tenant)
    return sorted((r.title, r.acl, r.uploaded_by) for r in rows)


def test_ingested_documents_are_listed_for_the_page(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.md").write_text("# Alpha\n\nAlpha particles are helium nuclei.")
    monkeypatch.setenv("AGENTBUS_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("AGENTBUS_EMBEDDER", "hashing")
    settings = AppSettings.load()
    (tmp_path / "data").mkdir()
    asyncio.run(upgrade_async(settings.bus.resolved_database_url()))
    result = CliRunner().invoke(app, ["ingest", str(folder), "--direct", "--acl", "physics"])
    assert result.exit_code == 0, result.output
    assert asyncio.run(_listed(settings)) == [("Alpha", ["physics"], settings.api.subject)]
