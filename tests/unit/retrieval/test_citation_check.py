"""The citation check touches citations only: property tests over random Markdown.

The shipped answers it must give back byte for byte (lists, intervals, code, tables,
links, footnotes, citations real and invented) are in ``test_citation_set.py``.
"""

from __future__ import annotations

import itertools
import re
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from retrieval.citations import CitationCheck, RetrievedChunk, check_citations

#: Anything shaped like a marker, in any position (the check may only touch these).
MARKER = re.compile(r"\[[1-9]\d{0,2}(?:, {0,2}[1-9]\d{0,2})*\]")


def refs(numbers: Any) -> dict[int, RetrievedChunk]:
    """Chunks shown to the model under ``numbers``."""
    return {n: RetrievedChunk(n, f"id{n}", f"doc{n}.md", f"Doc {n}", f"text {n}") for n in numbers}


def test_the_issue_sentence_is_left_alone() -> None:
    sentence = (
        "Use arr[0] to get the first item; x = [1, 2, 3]. See [1](https://example.com). "
        "In [2024] it changed."
    )
    for shown in ((), (1,), (1, 2, 3)):
        checked = check_citations(sentence, refs(shown))
        assert (checked.answer, checked.stripped) == (sentence, 0)


def test_a_group_is_a_citation_only_when_every_number_was_shown() -> None:
    for answer in ("The list [1, 2, 3] has three items.", "Set the range to [1, 3].", "[2, 7]"):
        checked = check_citations(answer, refs([1, 2]))
        assert (checked.answer, checked.stripped, checked.citations) == (answer, 0, [])
    both = check_citations("Both say so [1, 2].", refs([1, 2]))
    assert (both.answer, [c.ref for c in both.citations]) == ("Both say so [1, 2].", [1, 2])


def test_a_hallucinated_number_is_gone_and_counted() -> None:
    checked = check_citations("Redis streams persist [1]. Groups ack [4].", refs([1]))
    assert checked.answer == "Redis streams persist [1]. Groups ack."
    assert checked.stripped == 1
    assert [(c.ref, c.source, c.title) for c in checked.citations] == [(1, "doc1.md", "Doc 1")]


# An alphabet rich in what code and Markdown are made of.
_CHARS = st.sampled_from([*list("ab xyz01239[](),.:;=`~\n\t-|$\\\"'_^*"), "[1]", "[2, 3]", "```"])
_TEXT = st.lists(_CHARS, max_size=80).map("".join)
_REFS = st.sets(st.integers(min_value=1, max_value=12), max_size=6)


@settings(max_examples=400, deadline=None)
@given(text=_TEXT, shown=_REFS)
def test_text_without_a_marker_shape_is_byte_identical(text: str, shown: set[int]) -> None:
    text = MARKER.sub("", text)
    if MARKER.search(text):
        return  # removing one made another (``[[1]]`` -> ``[]``...): not this property
    checked = check_citations(text, refs(shown))
    assert (checked.answer, checked.stripped, checked.citations) == (text, 0, [])


@settings(max_examples=400, deadline=None)
@given(text=_TEXT, shown=_REFS, cuts=st.lists(st.integers(min_value=0, max_value=80)))
def test_any_split_of_the_stream_gives_the_whole_texts_answer(
    text: str, shown: set[int], cuts: list[int]
) -> None:
    whole = check_citations(text, refs(shown))
    check = CitationCheck(refs(shown))
    bounds = sorted({0, len(text), *(c for c in cuts if c <= len(text))})
    out = "".join(check.feed(text[a:b]) for a, b in itertools.pairwise(bounds))
    assert out + check.finish() == whole.answer
    assert (check.stripped, check.citations) == (whole.stripped, whole.citations)


_CODE = st.lists(st.sampled_from([*list("ab 0129[](),=:.`\t"), "[1]", "[7]", "x[0]"])).map("".join)


@settings(max_examples=300, deadline=None)
@given(before=_TEXT, code=_CODE, after=_TEXT, shown=_REFS)
def test_a_fenced_block_never_changes(before: str, code: str, after: str, shown: set[int]) -> None:
    fence = "\n~~~~~\n"  # a tilde fence longer than anything the alphabet can close it with
    checked = check_citations(before + fence + code + fence + after, refs(shown))
    assert fence + code + fence in checked.answer


@settings(max_examples=300, deadline=None)
@given(before=_TEXT, code=_CODE, shown=_REFS)
def test_an_inline_code_span_never_changes(before: str, code: str, shown: set[int]) -> None:
    span = "`" + code.replace("`", "") + "`"
    # The span starts a line of its own words, so the text before cannot leave one open.
    checked = check_citations(before + "\nsee " + span + " ok", refs(shown))
    assert checked.answer.endswith("\nsee " + span + " ok")


@settings(max_examples=300, deadline=None)
@given(text=_TEXT)
def test_markers_naming_only_shown_numbers_stay(text: str) -> None:
    shown = refs(range(1, 1000))
    assert check_citations(text, shown).answer == text


def test_a_removed_markers_comma_goes_only_when_another_marker_follows() -> None:
    shown = refs([1, 2])
    cases = {
        "Sources: [1], [4], [6].": "Sources: [1].",
        "Sources: [4], [1].": "Sources: [1].",
        "[1], [9], [2] end": "[1], [2] end",
        "as shown [1], the value": "as shown [1], the value",
        "a [9], b": "a, b",
        "see [9],\nnext": "see,\nnext",
        "x [4], [2, 7] z": "x, [2, 7] z",
    }
    for text, expected in cases.items():
        assert check_citations(text, shown).answer == expected, text
        check = CitationCheck(shown)
        streamed = "".join(check.feed(c) for c in text) + check.finish()
        assert streamed == expected, text


def test_an_invented_marker_after_an_autolink_is_removed_but_a_comparison_stays() -> None:
    shown = refs([1])
    docs = "Docs at <https://example.com/docs> [6]."
    assert check_citations(docs, shown).answer == "Docs at <https://example.com/docs>."
    assert check_citations("if a > [6] then", shown).answer == "if a > [6] then"
