"""The draft's claims set beside the evidence they are about (`agents.understanding.claims.pairs`);
examples made up, no case of an eval set."""

from __future__ import annotations

from agents.understanding.claims.pairs import MAX_PAIRS, Pair, pairs, shown

FERRY = (
    "Kelsby ferry timetable. The first ferry leaves Kelsby at 06:15 and the last at 21:45. "
    "A return ticket costs 12 EUR; a bicycle travels for 3 EUR. The crossing takes 35 minutes."
)


def test_each_sentence_of_the_draft_is_set_beside_the_evidence_sentence_about_it() -> None:
    found = pairs(
        "How much is a return ticket, and how long is the crossing?",
        "A return ticket costs 12 EUR [1]. The crossing takes 40 minutes [1].",
        [FERRY],
    )
    ticket, crossing = "A return ticket costs 12 EUR", "The crossing takes 35 minutes"
    assert found == [
        Pair(ticket, ticket, ticket),
        Pair("The crossing takes 40 minutes", crossing, crossing),
    ]


def test_the_quote_is_the_conjunct_that_states_the_claims_figure() -> None:
    [pair] = pairs(
        "When does the last ferry leave?", "The last ferry leaves at 21:45 [1].", [FERRY]
    )
    assert pair.evidence == "The first ferry leaves Kelsby at 06:15 and the last at 21:45"
    assert pair.quote == "the last at 21:45"


def test_a_claim_no_evidence_sentence_shares_a_word_with_has_none() -> None:
    [pair] = pairs("Is there a café?", "Passengers enjoy a panoramic lounge.", [FERRY])
    assert pair == Pair("Passengers enjoy a panoramic lounge", "", "")
    assert "(nothing about this)" in shown([pair])


def test_a_long_draft_gives_at_most_its_first_claims() -> None:
    draft = " ".join(f"The ferry number {i} leaves Kelsby." for i in range(MAX_PAIRS + 3))
    assert len(pairs("When does the ferry leave?", draft, [FERRY])) == MAX_PAIRS
