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
        (["--model", "qwen2.5-coder-0.5b", "--fold", "maybe"], "'maybe'"),
    ],
)
def test_a_bad_choice_is_a_usage_error_naming_it(args: list[str], named: str) -> None:
    result = CliRunner().invoke(app, ["bench", "local", *args])
    assert result.exit_code == 2
    assert named in result.output


def test_each_fold_choice_is_a_configuration_of_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    from agentbus_bench import local

    seen: list[str] = []

    def main(*, configs: list[local.Config], **_: object) -> None:
        seen.extend(c.label() for c in configs)

    monkeypatch.setattr(local, "main", main)
    args = ["--model", "qwen2.5-coder-0.5b", "--parallel", "4", "--fold", "on", "--fold", "off"]
    result = CliRunner().invoke(app, ["bench", "local", *args])
    assert result.exit_code == 0, result.output
    assert [label.rsplit(" ", 1)[-1] for label in seen] == ["fold=on", "fold=off"]
