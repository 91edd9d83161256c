"""`agentbus eval claims --limit N`: only the first N drafts of the half, kinds in turn."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from api.cli.main import app


def test_limit_checks_the_first_drafts_of_the_half_with_the_kinds_in_turn() -> None:
    args = ["eval", "claims", "--model", "rules", "--half", "dev", "--limit", "3", "--json"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    row = json.loads(result.stdout.splitlines()[-1])
    assert row["drafts"] == 3
    assert [o["kind"] for o in row["outcomes"]] == ["right", "wrong_number", "not_in_evidence"]
