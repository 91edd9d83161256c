"""An answer that cites nothing gets the passage it rests on, and only when a reader would agree."""

from __future__ import annotations

from retrieval.attribution import attribute
from retrieval.citations import CitationCheck, RetrievedChunk, check_citations

POLICY = RetrievedChunk(
    1,
    "c1",
    "travel-policy",
    "Northwind travel policy",
    "The daily meal allowance (per diem) is 62 EUR in Germany and 48 EUR in Portugal. Hotel "
    "nights are reimbursed up to 145 EUR per night. Expense reports must be filed within 14 "
    "days of returning from a trip.",
)
HALCYON = RetrievedChunk(
    2,
    "c2",
    "halcyon",
    "Project Halcyon",
    "Project Halcyon is led by Mirela Okafor. Its production database listens on port 6543 "
    "and its budget for 2026 is 1,800,000 EUR.",
)
SHOWN = {1: POLICY, 2: HALCYON}


def test_an_answer_restating_a_passage_rests_on_it() -> None:
    assert attribute("Hotel nights are reimbursed up to 145 EUR per night.", "", SHOWN) == 1
    asked = "Up to how much is a hotel night reimbursed?"  # night(s): one stem
    assert attribute("The hotel nights reimbursed up to 145 EUR.", asked, SHOWN) == 1
    assert attribute("Halcyon is led by Mirela Okafor.", "Who leads Halcyon?", SHOWN) == 2
    assert attribute("Mirela Okafor.", "Who leads Project Halcyon?", SHOWN) == 2
    # "leads" (asked and answered) is not "led" (the passage's): no source, not a doubtful one.
    assert attribute("Mirela Okafor leads Project Halcyon.", "Who leads Halcyon?", SHOWN) is None
    assert attribute("The budget is 1,800,000 EUR.", "Halcyon's budget?", SHOWN) == 2


def test_the_framing_of_the_question_is_not_a_term_the_passage_must_hold() -> None:
    office = RetrievedChunk(
        4, "c4", "lisbon", "Lisbon office", "The guest Wi-Fi of the Lisbon office is called nw-7."
    )
    asked = "What is the name of the Lisbon office's guest Wi-Fi?"
    said = "The name of the Lisbon office's guest Wi-Fi is nw-7."
    assert attribute(said, asked, {4: office}) == 4


def test_a_bare_figure_rests_on_the_passage_about_what_was_asked() -> None:
    asked = "Within how many days must expense reports be filed?"
    assert attribute("14", asked, SHOWN) == 1
    # 6543 is in the Halcyon passage, but the question is about something else entirely.
    assert attribute("6543", "What is the capital of Spain?", SHOWN) is None


def test_a_figure_counts_where_the_passage_says_it_not_anywhere_in_it() -> None:
    guide = RetrievedChunk(
        5,
        "c5",
        "onboarding",
        "Acme onboarding guide",
        "Holiday requests go through the HR portal at least 10 working days in advance.\n"
        "Each employee has 27 days of paid holiday per year.",
    )
    asked = "How many days of paid holiday do employees get?"
    assert attribute("27", asked, {5: guide}) == 5
    assert attribute("10", asked, {5: guide}) is None  # the wrong figure, misread
    # 62 and 48 are the passage's, 14 is from another of its sentences: not this claim.
    said = "Germany's 62 EUR minus Portugal's 48 EUR is 14 EUR."
    assert attribute(said, "Difference of the per diems?", SHOWN) is None
    room = RetrievedChunk(6, "c6", "rooms", "Rooms", "Room 437 is on floor 4.")
    assert attribute("437", "What is 23 × 19?", {6: room}) is None  # a question of no words


def test_an_answer_that_copies_the_whole_passage_rests_on_it() -> None:
    # The 1.5B's habit: each of its sentences is one of the passage's.
    asked = "Up to how much is a hotel night reimbursed?"
    assert attribute(POLICY.text, asked, SHOWN) == 1


def test_a_figure_no_passage_holds_names_no_source() -> None:
    # Computed from the passage (5 days at 62 EUR): the passage does not hold 310.
    assert attribute("Five days in Germany come to 310 EUR.", "per diem", SHOWN) is None
    assert attribute("23 × 19 = 437.", "What is 23 × 19?", SHOWN) is None


def test_a_passage_lacking_a_term_of_the_question_the_answer_repeats_backs_nothing() -> None:
    asked = "What port does the Halcyon staging database listen on?"
    said = "The Halcyon staging database listens on port 6543."
    assert attribute(said, asked, SHOWN) is None  # the passage is about production
    asked = "Which port does the Halcyon production database listen on?"
    assert attribute(said.replace("staging", "production"), asked, SHOWN) == 2


def test_an_answer_about_something_else_names_no_source() -> None:
    assert attribute("Madrid is the capital of Spain.", "Capital of Spain?", SHOWN) is None
    assert attribute("Hello Ann, nice to meet you!", "Say hello to Ann.", SHOWN) is None
    assert attribute("", "Who leads Halcyon?", SHOWN) is None
    assert attribute("Okafor.", "Who leads Halcyon?", {}) is None


def test_the_passage_sharing_more_wins_and_a_tie_goes_to_the_first_shown() -> None:
    twin = RetrievedChunk(3, "c3", "copy", "Copy", HALCYON.text)
    assert attribute("Mirela Okafor leads Project Halcyon.", "", {3: twin, 2: HALCYON}) == 2
    assert attribute("The per diem in Germany is 62 EUR.", "", SHOWN) == 1


def test_the_appended_marker_is_a_kept_citation_the_check_keeps_again() -> None:
    check = CitationCheck(SHOWN)
    answer = check.feed("Hotel nights are reimbursed up to 145 EUR per night.") + check.finish()
    marked = f"{answer} {check.cite(1)}"
    assert [c.ref for c in check.citations] == [1]
    again = check_citations(marked, SHOWN)  # as a surface that checks the text itself would
    assert (again.answer, [c.ref for c in again.citations]) == (marked, [1])
