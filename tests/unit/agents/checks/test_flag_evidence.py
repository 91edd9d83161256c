"""When a judge model's own request for changes counts (`agents.checks.flag_evidence`).
The examples are made up, no case of an eval set."""

from __future__ import annotations

from agents.checks.flag_evidence import quoted, unfounded
from agents.understanding.claims.ports import ClaimDraft

RATES = "Ferry fares. A single ticket costs 9 EUR for adults and 5 EUR for children."


def _draft(draft: str, question: str = "What does a ferry ticket cost?") -> ClaimDraft:
    return ClaimDraft(question=question, draft=draft, evidence=[RATES])


def test_a_quote_must_be_the_evidences_own_words_in_order() -> None:
    assert quoted("single ticket costs 9 EUR", [RATES])
    assert quoted("A SINGLE  ticket, costs", [RATES])  # case and punctuation aside
    assert not quoted("ticket costs 9 EUR for children", [RATES])
    assert not quoted("", [RATES])


def test_a_flag_on_a_figure_one_step_from_the_evidence_is_no_refutation() -> None:
    # "How much more?": 4 is 9 - 5; quoting the two fares it comes from refutes nothing.
    asked = "How much more does an adult ticket cost than a child's?"
    draft = _draft("An adult pays 4 EUR more.", asked)
    why = unfounded(draft, "4 EUR more", "9 EUR for adults and 5 EUR for children")
    assert why is not None and "one step" in why


def test_a_flag_quoting_a_different_figure_for_the_same_thing_stands() -> None:
    draft = _draft("An adult ticket costs 11 EUR.")
    assert unfounded(draft, "11 EUR", "A single ticket costs 9 EUR for adults") is None


def test_a_flag_quoting_evidence_about_something_else_or_nothing_is_no_refutation() -> None:
    draft = _draft("An adult ticket costs 9 EUR.")
    assert unfounded(draft, "9 EUR", "Ferry fares") is not None
    assert unfounded(draft, "9 EUR", "") is not None
    assert unfounded(draft, "9 EUR", "An adult ticket costs 9 EUR") is not None


def test_without_evidence_the_models_flag_stands() -> None:
    bare = ClaimDraft(question="Write a haiku about ferries.", draft="Boats go.")
    assert unfounded(bare, "", "") is None


def _flagged(question: str, evidence: str, draft: str, quote: str) -> str | None:
    case = ClaimDraft(question=question, draft=draft, evidence=[evidence])
    return unfounded(case, draft, quote)


def test_a_capitalised_common_noun_is_no_name_the_draft_left_out() -> None:
    # German capitalises every noun: "Fahrkarte" names nothing the draft does not say.
    evidence = "Fähre Nordstrand. Eine Fahrkarte kostet 30 EUR pro Person und Fahrt."
    draft = "Die Überfahrt kostet 30 EUR pro Person und Fahrt."
    why = _flagged(
        "Was kostet die Fähre?", evidence, draft, "Eine Fahrkarte kostet 30 EUR pro Person"
    )
    assert why is not None and "states what the draft states" in why


def test_a_name_written_in_lower_case_is_still_a_name() -> None:
    evidence = "Shuttle times. The shuttle to kelsby leaves at 09:00 from gate 4."
    draft = "The shuttle to Dunmore leaves at 09:00 from gate 4."
    quote = "The shuttle to kelsby leaves at 09:00"
    assert _flagged("When does the shuttle leave?", evidence, draft, quote) is None


def test_a_weekday_or_a_limit_in_another_language_is_read() -> None:
    shop = "Horário da loja. A loja abre na terça-feira às 09:00."
    draft = "A loja abre na segunda-feira às 09:00."
    assert _flagged("Quando abre a loja?", shop, draft, "A loja abre na terça-feira") is None
    refunds = "Reembolsos. O reembolso é pago apenas aos sócios do clube."
    said = "O reembolso é pago aos sócios do clube."
    assert _flagged("Quem recebe o reembolso?", refunds, said, "pago apenas aos sócios") is None
    kept = "O reembolso é pago só aos sócios do clube."
    assert _flagged("Quem recebe o reembolso?", refunds, kept, "pago apenas aos sócios") is not None


def test_a_name_the_question_states_the_draft_need_not_repeat() -> None:
    evidence = "Kelsby ferry. Bicycles travel for 3 EUR on the Kelsby crossing."
    asked = "What does a bicycle cost on the Kelsby crossing?"
    case = ClaimDraft(question=asked, draft="A bicycle travels for 3 EUR.", evidence=[evidence])
    assert unfounded(case, "3 EUR", "Bicycles travel for 3 EUR on the Kelsby crossing") is not None


def test_a_rate_written_out_as_its_total_over_its_count_is_no_refutation() -> None:
    # 15 a day "(45 over 3 days)" of days of 10, 15 and 20: the quoted day is no refutation.
    evidence = "Bakery log. Loaves sold: Monday 10, Tuesday 15, Wednesday 20."
    asked = "How many loaves a day did the bakery sell on average?"
    draft = "15 loaves a day on average (45 over 3 days)."
    case = ClaimDraft(question=asked, draft=draft, evidence=[evidence])
    assert unfounded(case, draft, "Loaves sold: Monday 10") is not None
