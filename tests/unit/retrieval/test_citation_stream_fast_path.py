"""An answer streams through the citation check unchanged until its first ``[``, and the
check still gives what it gives the whole text: spaces before an invented marker that
arrive in an earlier piece are held, so they go with the marker."""

from __future__ import annotations

import random

import pytest

from retrieval.citations import CitationCheck, RetrievedChunk, check_citations

SHOWN = {1: RetrievedChunk(1, "c1", "a.md", "A", "Paris is the capital.")}
ANSWERS = [
    "Paris is the capital.  [7] It is big [1].",
    "Paris is the capital. \t",
    "```\nx = [1, 2]\n```\nDone [7].",
    "Use `a[0]` then see [1]; not [9].",
    "The list [1, 2, 3] has three items.",
    "No brackets at all, just words and   spaces   ",
]


@pytest.mark.parametrize("answer", ANSWERS)
def test_a_streamed_answer_checks_as_the_whole_text_does(answer: str) -> None:
    whole = check_citations(answer, SHOWN).answer
    rnd = random.Random(answer)
    for _ in range(50):
        cuts = sorted(rnd.sample(range(1, len(answer)), k=min(6, len(answer) - 1)))
        pieces = [answer[a:b] for a, b in zip([0, *cuts], [*cuts, len(answer)], strict=True)]
        check = CitationCheck(SHOWN)
        streamed = "".join(check.feed(p) for p in pieces) + check.finish()
        assert streamed == whole, pieces


def test_text_before_the_first_bracket_is_sent_at_once_but_its_trailing_spaces() -> None:
    check = CitationCheck(SHOWN)
    assert check.feed("Paris is the capital. ") == "Paris is the capital."
    assert check.feed(" [7] Yes.") == " Yes."
    assert check.finish() == ""
    assert check.stripped == 1
