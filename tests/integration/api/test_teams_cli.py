"""``agentbus teams``: apply a file, list, show as Mermaid, delete; an invalid file prints
each fault with its pointer and exits 2, and nothing is stored."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
import structlog
from typer.testing import CliRunner

from api.cli import teams
from bus.store import upgrade_async

EXAMPLES = Path(__file__).parents[3] / "docs" / "teams"


@pytest.fixture(autouse=True)
def _store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    url = f"sqlite+aiosqlite:///{tmp_path / 'store.db'}"
    asyncio.run(upgrade_async(url))
    monkeypatch.setenv("AGENTBUS_DATABASE_URL", url)
    monkeypatch.setenv("AGENTBUS_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("AGENTBUS_TENANT", "t1")
    yield
    structlog.reset_defaults()  # the CLI logs into CliRunner's stderr, closed after it


def test_a_team_file_is_applied_listed_drawn_and_deleted() -> None:
    runner = CliRunner()
    applied = runner.invoke(teams.app, ["apply", str(EXAMPLES / "triage.yaml")])
    assert applied.exit_code == 0, applied.output
    assert applied.output.strip() == "triage version 1"
    again = runner.invoke(teams.app, ["apply", str(EXAMPLES / "triage.yaml")])
    assert again.output.strip() == "triage version 2"

    listed = runner.invoke(teams.app, ["list"]).output.splitlines()
    assert [line.split()[0] for line in listed] == ["single", "multi", "triage"]
    drawn = runner.invoke(teams.app, ["show", "triage", "--graph"]).output
    assert "triage -->|answer category=billing| billing" in drawn

    assert runner.invoke(teams.app, ["delete", "triage"]).output.strip() == "deleted triage"
    assert runner.invoke(teams.app, ["show", "triage"]).exit_code == 2


def test_an_invalid_file_prints_each_fault_and_stores_nothing(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yaml"
    text = (EXAMPLES / "triage.yaml").read_text()
    broken.write_text(text.replace("\nname: triage", "").replace("to: technical}", "to: tech}"))
    runner = CliRunner()

    refused = runner.invoke(teams.app, ["apply", str(broken)])

    assert refused.exit_code == 2
    assert "/edges/2/to  unknown_node" in refused.output
    assert "/agents/2  unreachable" in refused.output
    assert runner.invoke(teams.app, ["show", "broken"]).exit_code == 2
