"""Evidence grounding by string match (`agents.understanding.claims.grounding`), on the
evals' drafts."""

from __future__ import annotations

import pytest

from agents.understanding.claims.grounding import (
    applies,
    excused,
    held,
    mismatches,
    unsupported_clauses,
    unsupported_figures,
)

POLICY = (
    "Northwind travel policy. The daily meal allowance (per diem) is 62 EUR in Germany and "
    "48 EUR in Portugal. Hotel nights are reimbursed up to 145 EUR per night. Economy class "
    "is required for flights shorter than 6 hours. Expense reports must be filed within 14 "
    "days of returning from a trip."
)
LISBON = "Lisbon office guide. The office opens at 07:30 and closes at 19:00."
HALCYON = (
    "Project Halcyon is led by Mirela Okafor; its database administrator is Tomas Berg. The "
    "Halcyon production database listens on port 6543 and the staging database on port 6544."
)


@pytest.mark.parametrize(
    ("question", "evidence", "draft"),
    [
        ("What is the daily meal allowance in Germany?", POLICY, "It is 62 EUR [1]."),
        (
            "What is the total meal allowance for a 5-day trip in Germany?",
            POLICY,
            "5 days × 62 EUR = 310 EUR [1].",
        ),
        (
            "How many minutes is the Lisbon office open each day?",
            LISBON,
            "It is open 690 minutes a day (11 h 30 min), from 07:30 to 19:00 [1].",
        ),
        (
            "Must I fly economy class?",
            POLICY,
            "Only on flights shorter than 6 hours: economy class is required for those [1].",
        ),
        (
            "According to our travel policy documents, how many EUR more is the daily meal "
            "allowance in Germany than in Portugal?",
            POLICY,
            "The daily meal allowance in Germany is 14 EUR more than in Portugal (62 - 48).",
        ),
        ("Who leads Project Halcyon?", HALCYON, "Mirela Okafor leads Project Halcyon [1]."),
        (
            "Which port does the Halcyon production database listen on?",
            HALCYON,
            "The production database listens on port 6543 [1].",
        ),
        (
            "Within how many days must expense reports be filed?",
            POLICY,
            "Within 14 days of returning from a trip [1]. This is calculated from the day you "
            "return.",
        ),
    ],
)
def test_a_right_draft_from_the_evidence_is_grounded(
    question: str, evidence: str, draft: str
) -> None:
    assert mismatches(draft, question, [evidence], []) == []


@pytest.mark.parametrize(
    ("question", "evidence", "draft", "named"),
    [
        ("What is the daily meal allowance in Germany?", POLICY, "It is 68 EUR [1].", "68"),
        (
            "Within how many days must expense reports be filed?",
            POLICY,
            "Within 30 days of returning from a trip [1].",
            "30",
        ),
        (
            "What is the daily meal allowance in Germany?",
            POLICY,
            "The daily meal allowance in Germany is 62 EUR [1], rising to 80 EUR in Munich.",
            "80",
        ),
        (
            "How many minutes is the Lisbon office open each day?",
            LISBON,
            "It is open 690 minutes a day, from 07:30 to 19:00 [1], and until 21:00 on Fridays.",
            "21:00",
        ),
        # From the answer eval (0.5B, multi accurate): figures no source holds.
        (
            "According to our travel policy documents, what is the total meal allowance for a "
            "5-day trip in Germany, in EUR?",
            POLICY,
            "The total meal allowance for a 5-day trip in Germany is 100 EUR.",
            "100",
        ),
        (
            "According to our documents, what would 3 hotel nights cost at the maximum "
            "reimbursed rate, in EUR?",
            POLICY,
            "3 hotel nights would cost 10.0000 EUR.",
            "10.0000",
        ),
        (
            "According to our travel policy documents, what is the per diem in France?",
            POLICY,
            "The per diem in France is 225 minutes.",
            "225",
        ),
    ],
)
def test_a_figure_no_source_holds_is_named(
    question: str, evidence: str, draft: str, named: str
) -> None:
    reasons = mismatches(draft, question, [evidence], [])
    [reason] = [r for r in reasons if "calculator" in r]  # a contradiction may come too
    assert f"states {named}" in reason


def test_a_figure_a_tool_computed_is_grounded() -> None:
    draft = "3 hotel nights cost 435 EUR [1]."
    computed = ['{"status": "ok", "result": {"expression": "145 * 3", "result": 435}}']
    question = "What would 3 hotel nights cost?"
    assert unsupported_figures(draft, question, [POLICY], computed) == []
    assert unsupported_figures("They cost 436 EUR [1].", question, [POLICY], computed) == ["436"]


def test_a_claim_the_evidence_does_not_hold_is_named() -> None:
    draft = (
        "Within 14 days of returning from a trip [1]; late reports are rejected by the "
        "finance team."
    )
    question = "Within how many days must expense reports be filed?"
    assert unsupported_clauses(draft, question, [POLICY]) == [
        "late reports are rejected by the finance team"
    ]
    [reason] = mismatches(draft, question, [POLICY], [])
    assert "does not hold this claim" in reason


@pytest.mark.parametrize(
    ("question", "draft", "taken", "instead"),
    [
        (
            "Who leads Project Halcyon?",
            "Tomas Berg leads Project Halcyon [1].",
            "Tomas Berg",  # "berg" is an English word; after a name, it goes on with it
            "Mirela Okafor",
        ),
        (
            "Which port does the Halcyon production database listen on?",
            "The production database listens on port 6544 [1].",
            "6544",
            "6543",
        ),
    ],
)
def test_a_figure_or_name_from_the_wrong_part_of_the_evidence_is_named(
    question: str, draft: str, taken: str, instead: str
) -> None:
    [reason] = mismatches(draft, question, [HALCYON], [])
    assert f"states {taken} (the evidence gives {instead} for this)" in reason


def test_a_figure_from_the_wrong_part_is_named_beside_a_tool_reply_stating_a_zero() -> None:
    # A fact-check's current_time reply ("+00:00" reads as 0) made every figure of the
    # evidence "one step" from it (x - 0), so the wrong gate's code passed as computed.
    question = "Which code opens the north gate?"
    gates = "The north gate opens with code 4412 and the south gate with code 4415."
    clock = '{"time": "14:00:00", "utc_offset": "+00:00", "unix": 1773151200.0}'
    draft = "The north gate opens with code 4415 [1]."
    for evidence in ([gates], [gates, clock]):
        [reason] = mismatches(draft, question, evidence, [])
        assert "states 4415 (the evidence gives 4412 for this)" in reason
    assert (
        mismatches("The north gate opens with code 4412 [1].", question, [gates, clock], []) == []
    )


def test_a_step_that_gives_back_one_of_its_figures_excuses_nothing() -> None:
    # Adding a zero or multiplying by one is no arithmetic: 18 is the evidence's own figure,
    # not a result; 36 is one.
    allowed = excused(
        "How much are 1 night and 2 nights?", ["A pitch costs 18 EUR a night; 0 EUR for dogs."], []
    )
    assert not held(18, allowed)
    assert held(36, allowed)


def test_grounding_applies_only_to_drafts_that_answer_from_evidence() -> None:
    assert not applies("What is 1234 × 5678?", "It is 7006652.", [])
    assert not applies("In Python, what does len('agentbus') return?", "8", ["some passage"])
    assert applies("Who leads it?", "Mirela Okafor [1].", [HALCYON])
    assert applies("According to our documents, who leads it?", "Tomas Berg.", [HALCYON])
    # No documents in play: a computed answer is not held to the evidence.
    assert (
        mismatches("len('agentbus') returns 8.", "What does len('agentbus') return?", [], []) == []
    )


@pytest.mark.parametrize(
    ("question", "draft", "caveat"),
    [
        ("Must I fly economy class?", "Yes, economy class is required [1].", "shorter than"),
        (
            "How much is a hotel night reimbursed?",
            "Every hotel night is reimbursed 145 EUR, whatever it cost [1].",
            "up to",
        ),
    ],
)
def test_a_limit_the_draft_drops_is_named(question: str, draft: str, caveat: str) -> None:
    [reason] = mismatches(draft, question, [POLICY], [])
    assert f"drops the evidence's limit '{caveat}'" in reason


def test_a_limit_kept_or_named_by_the_question_is_not_a_dropped_caveat() -> None:
    question = "What would 3 hotel nights cost at the maximum reimbursed rate?"
    draft = "3 hotel nights are reimbursed 3 × 145 = 435 EUR [1]."
    assert mismatches(draft, question, [POLICY], []) == []
    kept = "Hotel nights are reimbursed up to 145 EUR per night [1]."
    assert mismatches(kept, "How much is a hotel night reimbursed?", [POLICY], []) == []


def test_a_draft_about_the_documents_that_read_none_of_them_is_unsupported() -> None:
    # The 0.5B fetched a web page for a question about the travel policy and answered 120000.
    question = (
        "According to our travel policy documents, what is the total meal allowance for a "
        "5-day trip in Germany, in EUR?"
    )
    fetched = ['{"status": "error", "code": "egress_denied"}']
    [reason] = mismatches("120000", question, fetched, [], read_documents=False)
    assert "search the documents" in reason
    assert mismatches("5 × 62 = 310 EUR [1].", question, [POLICY], [], read_documents=True) == []
    # A question that is not about the documents needs none.
    assert mismatches("It is 7006652.", "What is 1234 × 5678?", [], [], read_documents=False) == []


def test_a_figure_the_evidence_states_differently_for_the_same_thing_is_a_contradiction() -> None:
    guide = (
        "Acme onboarding guide. Holiday requests go through the HR portal at least 10 working "
        "days in advance. Each employee has 27 days of paid holiday per year."
    )
    question = "How many days of paid holiday do I get?"
    # 17 is 27 - 10, one step from two of the guide's figures, and the draft cites nothing:
    # neither excuses a figure the guide states otherwise for the same thing.
    [reason] = mismatches("You get 17 days of paid holiday.", question, [guide], [])
    assert "17 days of paid holiday" in reason
    assert "the evidence states 27 days of paid holiday per year" in reason
    assert mismatches("You get 27 days of paid holiday a year.", question, [guide], []) == []


def test_a_figure_the_question_or_a_tool_derives_is_no_contradiction() -> None:
    asked = "What is the total meal allowance for a 5-day trip in Germany?"
    assert mismatches("310 EUR in Germany for the 5 days [1].", asked, [POLICY], []) == []
    more = "How much more is the per diem in Germany than in Portugal?"
    assert mismatches("It is 14 EUR more than in Portugal [1].", more, [POLICY], []) == []


READINGS = (
    "Well 3 water meter, litres drawn per week in May.\n"
    "Week 1: 140 litres.\nWeek 2: 95 litres.\nWeek 3: 120 litres.\nWeek 4: 125 litres."
)


@pytest.mark.parametrize(
    "draft",
    [
        # The total and the count of the series, written out as a rate, and its mean.
        "Well 3 drew 120 litres a week on average: 480 litres over 4 weeks [1].",
        "On average 120 litres per week (480 / 4) [1].",
    ],
)
def test_a_rate_written_out_as_total_over_count_is_grounded(draft: str) -> None:
    question = "How many litres did well 3 draw per week on average in May?"
    assert unsupported_figures(draft, question, [READINGS], []) == []
    assert mismatches(draft, question, [READINGS], []) == []


def test_a_rate_from_a_total_and_a_span_the_evidence_states_is_grounded() -> None:
    log = "The survey boat covered 126 nautical miles in 9 days."
    asked = "How far did the survey boat go per day?"
    assert (
        mismatches("It covered 14 nautical miles a day (126 over 9 days) [1].", asked, [log], [])
        == []
    )
    # A rate that is not the evidence's quotient, nor its total and count, is still named.
    assert unsupported_figures("It covered 16 nautical miles a day [1].", asked, [log], []) == [
        "16"
    ]
    # A total beside a count that is not its series' is no rate: both are named.
    wrong = unsupported_figures("480 litres over 6 weeks [1].", "How much?", [READINGS], [])
    assert wrong == ["480", "6"]


def test_a_total_given_as_the_average_is_still_named() -> None:
    # 480 is the four weeks' total: said alone as the weekly average, it is no rate.
    question = "How many litres did well 3 draw per week on average in May?"
    draft = "Well 3 drew 480 litres a week on average in May [1]."
    assert unsupported_figures(draft, question, [READINGS], []) == ["480"]
