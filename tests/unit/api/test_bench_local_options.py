"""`agentbus bench local`: unknown models, drafts and modes are refused before any load."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from api.cli.main import app


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["--model", "gpt-4"], "'gpt-4'"),
        (["--model", "qwen2.5-coder-0.5b", "--draft", "tiny"], "'tiny'"),
        (["--model", "qwen2.5-coder-0.5b", "--mode", "custom"], "'custom'"),
    ],
)
def test_a_bad_choice_is_a_usage_error_naming_it(args: list[str], named: str) -> None:
    result = CliRunner().invoke(app, ["bench", "local", *args])
    assert result.exit_code == 2
    assert named in result.output
