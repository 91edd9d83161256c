"""The passage an answer that cites nothing rests on, found by what the two have in common.

Small local models answer from the passages they were shown but rarely write the ``[n]``
their prompt asks for, so the answer reaches the user without its source. The rule here is
strict, so a source it names is one a reader checking would agree with. A passage is the
source when:

- most of the answer's content words are in it (for a bare figure, ``38``: most of the
  question's, so the passage is about what was asked);
- every figure of the answer (``145``, ``1,800``, ``3.5``) is in a sentence of it that
  holds most of the words of the answer's sentence stating the figure (a bare figure: of
  the question): where the passage says it, not anywhere in it;
- every word the answer repeats from the question is in it: a passage about the production
  database does not back "the staging database listens on port 6543";
- at least one such word: an answer of only common words, or a bare figure answering a
  question of only common words (``What is 23 × 19?``), rests on nothing.

Words are compared by a crude stem (``nights`` and ``night``, ``office's`` and ``office``).

Among the passages that qualify, the one sharing the most words wins; on a tie, the lower
number (shown first, ranked higher). The caller appends the marker: text is never moved.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from retrieval.citations import RetrievedChunk

#: Share of the content words that must be in the passage.
MIN_SHARED = 0.6
_NUMBER = re.compile(r"(?<![\w.])\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![\w,])|(?<![\w.])\d+(?:\.\d+)?")
_SENTENCE = re.compile(r"(?<=[.!?;])\s+|\n+")
_WORD = re.compile(r"[^\W\d_][\w'-]*[^\W_]|[^\W\d_]{3,}")
# Words an answer or a question holds whatever it is about, and the framing of a question
# ("what is the name of..."): English; other languages' function words are mostly short,
# and words under four letters are not counted.
_COMMON = frozenset(
    """
    about above after again also answer because been before being below between both could
    does doing down during each from further have having here into just more most much many
    only other over same should some such than that their them then there these they this
    those through under until very what when where which while whom with would your yours
    according document documents says said please tell know name named called
    """.split()  # noqa: SIM905 (quoting each word reads worse)
)


def _figures(text: str) -> set[str]:
    return {m.group(0).replace(",", "").removesuffix(".0") for m in _NUMBER.finditer(text)}


_SUFFIXES = ("'s", "ing", "ed", "es", "s")


def _stem(word: str) -> str:
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            return word[: -len(suffix)]
    return word


def _words(text: str) -> set[str]:
    found = {w.lower() for w in _WORD.findall(text)}
    return {_stem(w) for w in found if len(w) >= 4 and w not in _COMMON}


def attribute(answer: str, question: str, passages: Mapping[int, RetrievedChunk]) -> int | None:
    """The number of the passage the answer rests on, or None (no passage qualifies).

    Args:
        answer: the answer as the user will read it (no marker in it).
        question: what was asked; its words stand in for a bare figure's.
        passages: the citable passages the answer's turn was shown, by number.
    """
    if not passages:  # shown nothing: nothing to rest on (most runs: no scan of the answer)
        return None
    figures, asked = _figures(answer), _words(question)
    said = _words(answer)
    words = said or (asked if figures else set())
    if not words:  # only common words, or a bare figure for a question of none
        return None
    enough = MIN_SHARED * len(words)
    # The answer's sentences that state figures, each with the words it says them with.
    claims = [
        (found, _words(t) or asked) for t in _SENTENCE.split(answer) if (found := _figures(t))
    ]
    best: tuple[int, int] | None = None  # (shared words, -ref)
    for ref, chunk in passages.items():
        held = _words(f"{chunk.title} {chunk.text}")
        shared = len(words & held)
        if shared < enough or (said & asked) - held:
            continue
        # Each figure where the passage says it: "10" of "10 working days in advance" does
        # not answer "how many days of paid holiday?" (the passage's "27 days" sentence does).
        sentences = [
            (_figures(t), _words(f"{chunk.title} {t}")) for t in _SENTENCE.split(chunk.text)
        ]
        if not all(_said_there(claim, sentences) for claim in claims):
            continue
        if best is None or (shared, -ref) > best:
            best = (shared, -ref)
    return None if best is None else -best[1]


def _said_there(
    claim: tuple[set[str], set[str]], sentences: list[tuple[set[str], set[str]]]
) -> bool:
    """Whether each figure of one sentence of the answer is in a sentence of the passage
    that holds most of that answer sentence's words."""
    figures, words = claim
    enough = MIN_SHARED * len(words)
    return bool(words) and all(
        any(f in found and len(words & near) >= enough for found, near in sentences)
        for f in figures
    )
