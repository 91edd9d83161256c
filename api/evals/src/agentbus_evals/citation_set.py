"""The citation eval: does the citation check touch citations only?

The set ships in ``agentbus_evals/data/citation_answers.json``: answers of the kinds a model
writes (prose lists, intervals, code, tables, Markdown links, footnotes, and citations,
real and invented), each with the passage numbers the run showed and the answer the
user must get back, byte for byte. Every case belongs to a half: ``dev`` (what the
rule was written against) or ``test`` (only run).

Each answer goes through `retrieval.citations.CitationCheck` twice: whole, and streamed
in random pieces (both must give the expected text). Besides matching the expected text,
the eval counts answers the check *changed other than by removing an invented citation*
(a lone ``[n]`` the run never showed, with the spaces or comma that went with it),
which must be none.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from retrieval.citations import CheckedAnswer, CitationCheck, RetrievedChunk, check_citations

Half = Literal["dev", "test"]
#: What one removal of an invented citation may take out of an answer.
_INVENTED = re.compile(r"[ \t,]*\[([1-9]\d{0,2})\][ \t,]*")
_REMOVABLE_START = frozenset(" \t,[")
_LONGEST = 16  # a removal is a marker of at most 5 characters and a few spaces or commas


class CitationCase(BaseModel):
    """An answer, the numbers its run showed, and what the check must give back."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    name: str = Field(min_length=1)
    half: Half
    kind: str = Field(min_length=1, description="what the answer is mostly made of")
    refs: list[int] = Field(description="the passage numbers the run showed")
    answer: str
    expected: str
    stripped: int | None = Field(default=None, description="invented citations removed")
    kept: list[int] | None = Field(default=None, description="citations, in order of use")
    known_miss: str | None = Field(
        default=None, description="why the check does not give the expected answer (yet)"
    )


class CitationSet(BaseModel):
    """The shipped answers."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    about: str
    cases: list[CitationCase]


def load_citation_set(path: Path | None = None) -> CitationSet:
    """The shipped answers, or those at ``path``."""
    source = path or Path(
        str(resources.files("agentbus_evals").joinpath("data", "citation_answers.json"))
    )
    return CitationSet.model_validate_json(source.read_text())


def shown(numbers: Iterable[int]) -> dict[int, RetrievedChunk]:
    """Passages shown to the model under ``numbers`` (their text does not matter here)."""
    return {n: RetrievedChunk(n, f"id{n}", f"doc{n}.md", f"Doc {n}", f"text {n}") for n in numbers}


def streamed(answer: str, refs: Iterable[int], rng: random.Random) -> CheckedAnswer:
    """The check fed ``answer`` in random pieces (1 to 8 characters), as tokens stream."""
    check = CitationCheck(shown(refs))
    out: list[str] = []
    at = 0
    while at < len(answer):
        size = rng.randint(1, 8)
        out.append(check.feed(answer[at : at + size]))
        at += size
    out.append(check.finish())
    return CheckedAnswer("".join(out), check.citations, check.stripped)


def only_invented_removed(answer: str, checked: str, refs: Iterable[int]) -> bool:
    """True if ``checked`` is ``answer`` with nothing changed but lone ``[n]`` markers of
    numbers not in ``refs`` taken out (with the spaces or comma that went with them)."""
    known = set(refs)
    todo, seen = [(0, 0)], set[tuple[int, int]]()
    while todo:  # (i, j): answer[:i] became checked[:j]
        i, j = todo.pop()
        if (i, j) in seen:
            continue
        seen.add((i, j))
        if i == len(answer) and j == len(checked):
            return True
        if i < len(answer) and j < len(checked) and answer[i] == checked[j]:
            todo.append((i + 1, j + 1))
        if i < len(answer) and answer[i] in _REMOVABLE_START:
            for end in range(i + 3, min(len(answer), i + _LONGEST) + 1):
                removed = _INVENTED.fullmatch(answer, i, end)
                if removed is not None and int(removed.group(1)) not in known:
                    todo.append((end, j))
    return False


@dataclass(frozen=True, slots=True)
class HalfScore:
    """How one half of the set fared.

    Attributes:
        half: ``dev`` or ``test``.
        cases: answers in the half.
        exact: answers whose checked text (whole and streamed) is the expected, byte for
            byte.
        changed: answers changed other than by removing an invented citation (target 0).
        failed: names of the answers that did not come back as expected (the known
            misses among them are marked ``known_miss`` in the set).
    """

    half: Half
    cases: int
    exact: int
    changed: int
    failed: tuple[str, ...]


def score(cases: Iterable[CitationCase], half: Half, seed: int = 0) -> HalfScore:
    """Run one half through the whole-text and the streamed check."""
    rng = random.Random(seed)
    picked = [c for c in cases if c.half == half]
    exact, changed, failed = 0, 0, list[str]()
    for case in picked:
        whole = check_citations(case.answer, shown(case.refs))
        pieces = streamed(case.answer, case.refs, rng)
        if whole.answer == pieces.answer == case.expected:
            exact += 1
        else:
            failed.append(case.name)
        outputs = (whole.answer, pieces.answer)
        if not all(only_invented_removed(case.answer, out, case.refs) for out in outputs):
            changed += 1
    return HalfScore(half, len(picked), exact, changed, tuple(failed))
