"""A judge's verdict per claim: the draft's claims set beside the evidence, one standing each.

The judge model reads the draft's claims numbered, each beside the evidence sentence about
it (`agents.understanding.claims.pairs`), and gives, before its verdict, one standing per
claim under its JSON schema (``claims``: ``same``, ``differs`` or ``absent``; the prompt's
words are `agents.prompts.CLAIMS_RULE`). A claim it says ``differs`` is a request for
changes quoting that evidence: it stands as the judge's flag only when founded as any flag
is (`agents.checks.flag_evidence`: the quoted part of the evidence states a figure, date,
name or limit the draft does not, about what the claim is about, and the claim's figures are
not one step from the evidence). So a small model that compares one claim with one sentence
can catch "40 minutes" beside "35 minutes" (made up, as every example here), and its
mistaken "differs" of a right claim is no refutation. The judge's own request for changes
whose quote is not the evidence's words (a small model paraphrases) is read the same way: it
stands when the evidence beside the claim it names founds it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from agents.checks import flag_evidence
from agents.understanding.claims.pairs import MAX_PAIRS, Pair

STANDINGS = ("same", "differs", "absent")
#: The judges' schema field, first in their schemas so that the claims are compared before
#: the verdict is written.
CLAIMS: dict[str, Any] = {
    "claims": {"type": "array", "maxItems": MAX_PAIRS, "items": {"enum": list(STANDINGS)}}
}


def standings(doc: dict[str, Any] | None) -> list[str]:
    """The standings a judge's reply gives its claims, in order (an unknown one as '')."""
    said = (doc or {}).get("claims")
    if not isinstance(said, list):
        return []
    return [s if s in STANDINGS else "" for s in said]  # pyright: ignore[reportUnknownVariableType]


def flagged(
    found: Sequence[Pair],
    said: Sequence[str],
    unfounded: Callable[[str, str], str | None],
) -> Pair | None:
    """The first claim the judge says the evidence beside it ``differs`` from, whose flag
    is founded (``unfounded(draft_says, evidence_says)`` is None); None when there is none."""
    for pair, standing in zip(found, said, strict=False):
        if standing == "differs" and pair.quote and unfounded(pair.claim, pair.quote) is None:
            return pair
    return None


def named(found: Sequence[Pair], draft_says: str) -> list[Pair]:
    """The claims a judge's own flag names: those holding its ``draft_says`` words in
    order, or the draft's one claim when it has one (a flag of a one-claim draft is of it)."""
    if draft_says.strip():
        held = [p for p in found if flag_evidence.quoted(draft_says, [p.claim])]
        if held:
            return held
    return list(found) if len(found) == 1 else []


def reason(pair: Pair) -> str:
    """The revision reason a founded claim flag gives."""
    return (
        f"the draft says {pair.claim!r}, and the evidence says otherwise: {pair.quote!r}; "
        "answer with what the evidence states"
    )
