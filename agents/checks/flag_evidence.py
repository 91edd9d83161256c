"""When a judge model's own request for changes counts as a refutation.

The critic's REVISE / REPLAN and the verifier's ``needs_revision`` / ``fail`` come with
what the draft says and the evidence's own words that state otherwise (``draft_says``,
``evidence_says``; `agents.checks.verdicts`). A small model often flags a right draft: its
reason restates the draft as the error, or names something the evidence supports. So,
when the run read evidence, a model's flag stands only when the words it quotes are in
the evidence and state something the draft does not: a figure, a date, a name or a limit
the draft (with the question it answers) leaves out or states otherwise, about what the
flagged words are about; and the draft's figures it flags are not the question's, a tool's
result, or one arithmetic step from the evidence (14 for "62 EUR and 48 EUR", asked how
much more). A
flag that fails this is not evidence against the draft: the verdict is unknown, never a
pass. A flag on figures the fact-check's tools recomputed and found right is unknown too.
Without evidence (a review of style or completeness) the model's flag stands as given.
What a quote states is read by the language helpers (`agents.understanding.language`):
figures and numbers in words (text2num), dates (dateparser), names from simplemma's
lexicon and weekdays and months from dateparser's calendar (`names`), and each language's
limit words (`limits`: "only", "apenas", "höchstens"), never from capital letters.
The examples are made up, no case of an eval set.
"""

from __future__ import annotations

import re

from agents.understanding.claims import grounding
from agents.understanding.claims.ports import ClaimDraft
from agents.understanding.language import clauses
from agents.understanding.language.limits import limits
from agents.understanding.language.names import names
from agents.understanding.language.numbers import ALONE_BELOW_ALL, CITATION
from agents.understanding.language.words import content_set, language, lemma

#: The verdicts that ask for changes (the critic's, then the verifier's).
FLAGS = ("REVISE", "REPLAN", "needs_revision", "fail")
_TOKEN = re.compile(r"\w+")


def _tokens(text: str) -> list[str]:
    return _TOKEN.findall(CITATION.sub(" ", text).casefold())


def quoted(span: str, texts: list[str]) -> bool:
    """Whether ``span``'s words appear, in order and together, in one of ``texts``
    (case, punctuation and citation markers aside)."""
    words = _tokens(span)
    if not words:
        return False
    n = len(words)
    for text in texts:
        tokens = _tokens(text)
        if any(tokens[i : i + n] == words for i in range(len(tokens) - n + 1)):
            return True
    return False


def _left_out(quote: str, draft: str, lang: str) -> list[str]:
    """What ``quote`` states that ``draft`` does not: figures (numbers in words too), dates,
    names, weekdays and months, limits."""
    figures, dates = grounding.values(quote)
    # "two years" states the 2 of "2 years" (a wider reading: fewer flags, never more).
    stated, stated_dates = grounding.values(CITATION.sub(" ", draft), alone_below=ALONE_BELOW_ALL)
    out = [str(v) for v in figures if not grounding.held(v, stated)]
    out += sorted(dates - stated_dates)
    said = names(draft, lang) | set(_tokens(draft)) | content_set(draft, lang)
    out += sorted(n for n in names(quote, lang) if n not in said and lemma(n, lang) not in said)
    if not limits(draft, lang):
        out += limits(quote, lang)
    return out


def unfounded(draft: ClaimDraft, draft_says: str, evidence_says: str) -> str | None:
    """Why a model's flag is no refutation (None: it stands).

    Args:
        draft: the question, the draft and what it may rest on (the claim check's input).
        draft_says: the draft's words the model flags (the whole draft when they are not
            the draft's).
        evidence_says: the evidence's words the model says state otherwise.
    """
    evidence = [e for e in draft.evidence if e.strip()]
    if not evidence:
        return None
    if not evidence_says.strip() or not quoted(evidence_says, evidence):
        return "it quotes nothing the evidence says against the draft"
    lang = language(f"{draft.question} {draft.draft}")
    said = draft_says if draft_says.strip() and quoted(draft_says, [draft.draft]) else draft.draft
    # What each side is about: the sentences that hold the flagged and the quoted words.
    around = [t for t in clauses.sentences(draft.draft) if quoted(said, [t])] or [draft.draft]
    topic = content_set(" ".join(around), lang)
    told = [t for e in evidence for t in clauses.sentences(e) if quoted(evidence_says, [t])]
    if not content_set(" ".join(told) or evidence_says, lang) & topic:
        return "the evidence it quotes is about something else"
    figures, _ = grounding.values(CITATION.sub(" ", said))
    stated, _ = grounding.values(CITATION.sub(" ", draft.draft))
    derived = grounding.excused(draft.question, evidence, draft.computed, stated)
    if figures and all(grounding.held(v, derived) for v in figures):
        return "the figures it flags are the question's, a tool's, or one step from the evidence"
    # What the question states, the draft need not repeat ("in Germany", asked of Germany).
    if not _left_out(evidence_says, f"{draft.question}\n{draft.draft}", lang):
        return "the evidence it quotes states what the draft states"
    return None
