"""The shipped citation answers come back exactly as expected, streamed or whole.

Both halves of ``agentbus_evals/data/citation_answers.json`` run here: every answer through
the whole-text check and through the streaming check fed in random pieces (several
seeds), each compared byte for byte with the expected answer.
"""

from __future__ import annotations

import random

import pytest
from typer.testing import CliRunner

from agentbus_evals.citation_set import (
    CitationCase,
    load_citation_set,
    only_invented_removed,
    score,
    shown,
    streamed,
)
from api.cli.main import app
from retrieval.citations import check_citations

CASES = load_citation_set().cases


def _param(case: CitationCase) -> object:
    """A case, expected to fail (strictly: a fix must update the set) if a known miss."""
    marks = [pytest.mark.xfail(reason=case.known_miss, strict=True)] if case.known_miss else []
    return pytest.param(case, id=f"{case.half}: {case.name}", marks=marks)


@pytest.mark.parametrize("case", [_param(c) for c in CASES])
def test_a_shipped_answer_comes_back_byte_for_byte(case: CitationCase) -> None:
    whole = check_citations(case.answer, shown(case.refs))
    assert whole.answer == case.expected
    for seed in range(5):
        pieces = streamed(case.answer, case.refs, random.Random(seed))
        assert pieces.answer == case.expected, f"seed {seed}"
        assert (pieces.stripped, pieces.citations) == (whole.stripped, whole.citations)
    if case.stripped is not None:
        assert whole.stripped == case.stripped
    if case.kept is not None:
        assert [c.ref for c in whole.citations] == case.kept


def test_the_set_has_both_halves_and_unique_names() -> None:
    halves = [c.half for c in CASES]
    assert len(CASES) >= 100 and halves.count("dev") >= 40 and halves.count("test") >= 40
    assert len({c.name for c in CASES}) == len(CASES)


@pytest.mark.parametrize("half", ["dev", "test"])
def test_no_answer_is_changed_but_by_removing_an_invented_citation(half: str) -> None:
    result = score(CASES, "dev" if half == "dev" else "test")
    misses = tuple(c.name for c in CASES if c.half == half and c.known_miss)
    assert (result.changed, result.failed) == (0, misses)


def test_the_changed_count_sees_a_list_cut_short() -> None:
    # What the check did before: a list read as citations lost its unshown number.
    assert not only_invented_removed("The list [1, 2, 3].", "The list [1, 2].", [1, 2])
    assert not only_invented_removed("Cited [1].", "Cited.", [1])  # a shown one removed
    assert only_invented_removed("See [1], [9], [2].", "See [1], [2].", [1, 2])


def test_the_eval_command_prints_both_halves() -> None:
    result = CliRunner().invoke(app, ["eval", "citations"])
    assert result.exit_code == 0, result.output
    dev, test = result.output.splitlines()
    assert dev.startswith("dev: 66/66 exact, 0 changed")
    assert test.startswith("test: 49/49 exact, 0 changed")
