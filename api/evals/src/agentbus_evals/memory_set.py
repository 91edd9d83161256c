"""The memory eval's set and its scoring: statements, the facts memory should keep, and
what an extractor kept.

The set ships in ``agentbus_evals/data/memory_eval.json``: statements in English, Portuguese,
Spanish, French and German, each of a kind: ``self`` (the user states facts about
themselves), ``correction`` (a new fact replacing an ``earlier`` one, whose words must be
``gone`` afterwards), and the negatives: ``request``, ``question``, ``hypothetical``,
``third_party``, ``negation``, ``quoted``. An expected fact is a list of words that must all
appear in one stored fact ("a|b": either), compared without case or accents; a stored fact
that names what neither the statement nor its expected facts name (an invented place) is
wrong. Every
statement belongs to a half: ``dev`` (what the rules and the prompt were written against)
or ``test`` (only run).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from agents.understanding.memory.ports import Statement
from agents.understanding.memory.rules.statement import fold

Half = Literal["dev", "test"]
Kind = Literal[
    "self", "correction", "request", "question", "hypothetical", "third_party", "negation", "quoted"
]
#: Which statements a run reads: all, those to keep, or the negatives (nothing to keep).
Statements = Literal["all", "keep", "negatives"]
#: The kinds whose facts must never be stored (the target: none).
ASKING: tuple[Kind, ...] = ("request", "question")


class MemoryCase(BaseModel):
    """One statement and what memory should make of it."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    id: str = Field(min_length=1)
    half: Half
    lang: Literal["en", "pt", "es", "fr", "de"]
    kind: Kind
    text: str = Field(min_length=1)
    facts: list[list[str]] = []
    earlier: str | None = None
    gone: list[str] = []


class MemorySet(BaseModel):
    """The shipped statements."""

    model_config = ConfigDict(frozen=True, extra="ignore")
    version: int
    statements: list[MemoryCase]


def load_memory_set(path: Path | None = None) -> MemorySet:
    """The shipped set, or another file of the same shape."""
    source = path or Path(
        str(resources.files("agentbus_evals").joinpath("data", "memory_eval.json"))
    )
    return MemorySet.model_validate(json.loads(source.read_text(encoding="utf-8")))


def _has(text: str, term: str) -> bool:
    folded = fold(text)
    return any(re.search(r"(?<!\w)" + re.escape(fold(alt)), folded) for alt in term.split("|"))


def matches(stored: str, expected: Sequence[str]) -> bool:
    """Whether a stored fact holds every word of an expected fact."""
    return all(_has(stored, term) for term in expected)


_NAME = re.compile(r"(?<=\s)[A-ZÀ-Ý][\w-]*")


def invented(stored: str, case: MemoryCase) -> list[str]:
    """The names a stored fact gives that neither the statement nor its expected facts hold
    ("works at Siemens's headquarters in Munich" from "I work at Siemens")."""
    said = fold(f"{case.earlier or ''} {case.text}")
    terms = [fold(alt) for f in case.facts for term in f for alt in term.split("|")]
    return [
        name
        for name in _NAME.findall(stored)
        if fold(name).strip("'s") not in said and not any(fold(name).startswith(t) for t in terms)
    ]


@dataclass(frozen=True, slots=True)
class MemoryOutcome:
    """What an extractor kept of one statement, judged."""

    id: str
    kind: str
    lang: str
    stored: list[str]
    right: int
    wrong: int
    kept_right: bool | None
    """None for a statement that should keep nothing."""
    seconds: float


def judge(
    case: MemoryCase, stored: Sequence[Statement], final: Sequence[Statement], seconds: float
) -> MemoryOutcome:
    """Score what was stored from a statement (``final``: the memory after it, for a
    correction's ``gone`` words)."""
    right = [
        s
        for s in stored
        if any(matches(s.text, f) for f in case.facts) and not invented(s.text, case)
    ]
    wrong = len(stored) - len(right)
    kept: bool | None = None
    if case.facts:
        found = all(any(matches(s.text, f) for s in stored) for f in case.facts)
        gone = not any(_has(s.text, g) for s in final for g in case.gone)
        kept = found and wrong == 0 and gone
    return MemoryOutcome(
        case.id, case.kind, case.lang, [s.text for s in stored], len(right), wrong, kept, seconds
    )


@dataclass(frozen=True, slots=True)
class MemorySummary:
    """The figures docs/evals.md reports, per extractor."""

    extractor: str
    statements: int
    kept_right: int
    should_keep: int
    facts_right: int
    facts_stored: int
    from_asking: int
    negatives_with_facts: int
    seconds_per_statement: float

    def line(self) -> str:
        """One line of the printed table."""
        share = self.kept_right / self.should_keep if self.should_keep else 0.0
        right = self.facts_right / self.facts_stored if self.facts_stored else 1.0
        return (
            f"{self.extractor:22} kept right {self.kept_right}/{self.should_keep} ({share:.0%})  "
            f"facts right {self.facts_right}/{self.facts_stored} ({right:.0%})  "
            f"from requests/questions {self.from_asking}  "
            f"negatives with facts {self.negatives_with_facts}  "
            f"{self.seconds_per_statement:.2f} s/statement"
        )


def summarize(extractor: str, outcomes: Sequence[MemoryOutcome]) -> MemorySummary:
    """The summary of one extractor's outcomes."""
    keep = [o for o in outcomes if o.kept_right is not None]
    negatives = [o for o in outcomes if o.kept_right is None]
    return MemorySummary(
        extractor=extractor,
        statements=len(outcomes),
        kept_right=sum(1 for o in keep if o.kept_right),
        should_keep=len(keep),
        facts_right=sum(o.right for o in outcomes),
        facts_stored=sum(o.right + o.wrong for o in outcomes),
        from_asking=sum(len(o.stored) for o in outcomes if o.kind in ASKING),
        negatives_with_facts=sum(1 for o in negatives if o.stored),
        seconds_per_statement=sum(o.seconds for o in outcomes) / len(outcomes) if outcomes else 0.0,
    )
