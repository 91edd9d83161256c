"""The model's claim check: one call per draft under the schema, its figures compared in code."""

from __future__ import annotations

import json

from agents.llm.scripted import ScriptedLLM, text, turn
from agents.understanding.claims.combined import ModelWithRules
from agents.understanding.claims.model import SCHEMA, ModelClaimCheck, parse_claims, sentences
from agents.understanding.claims.ports import ClaimDraft
from agents.understanding.claims.rules import RulesClaimCheck

# Not a case of any eval set: a made-up bakery.
EVIDENCE = [
    "Crumb Bakery price list. A sourdough loaf costs 4.80 EUR. Croissants cost 1.90 EUR each. "
    "Orders over 30 EUR are delivered free within the city."
]
QUESTION = "How much is a sourdough loaf at Crumb Bakery?"


def _draft(draft: str, evidence: list[str] | None = None) -> ClaimDraft:
    return ClaimDraft(
        question=QUESTION, draft=draft, evidence=EVIDENCE if evidence is None else evidence
    )


def _reply(*claims: dict[str, str]) -> str:
    return json.dumps({"claims": list(claims)})


def _claim(
    claim: str, said: str, told: str, standing: str, sentence: str = "1.2"
) -> dict[str, str]:
    return {
        "draft_claim": claim,
        "sentence": sentence,
        "draft_says": said,
        "evidence_says": told,
        "standing": standing,
    }


async def test_one_call_per_draft_under_the_schema_with_numbered_evidence_sentences() -> None:
    llm = ScriptedLLM([turn(text(_reply(_claim("4.80 EUR", "4.80 EUR", "4.80 EUR", "supported"))))])
    report = await ModelClaimCheck(llm).check(_draft("A loaf costs 4.80 EUR [1]."))
    assert report.readable and report.findings == []
    [(messages, tools, options)] = llm.requests
    assert options.response_schema == SCHEMA and tools == ()
    assert "1.2 A sourdough loaf costs 4.80 EUR." in messages[-1].content
    drafted = "Draft answer (list its claims): A loaf costs 4.80 EUR [1]."
    assert messages[-1].content.endswith(drafted)


async def test_the_question_goes_first_as_what_was_asked_and_the_draft_last() -> None:
    llm = ScriptedLLM([turn(text(_reply()))])
    await ModelClaimCheck(llm).check(_draft("A loaf costs 4.80 EUR [1]."))
    [(messages, _, _)] = llm.requests
    content = messages[-1].content
    assert content.startswith(f"The user asked (a question, no claim): {QUESTION}")
    assert content.index("Evidence sentences:") < content.index("Draft answer")
    assert "The question states nothing: it is never a claim" in messages[0].content


def test_a_claim_that_is_the_question_is_no_claim_of_the_draft() -> None:
    asked = _claim(QUESTION, "sourdough loaf", "4.80 EUR", "contradicted")
    reworded = _claim("how much is a sourdough loaf at crumb bakery", "loaf", "4.80", "absent")
    spanish = _claim("¿Cuánto cuesta una barra", "barra", "", "absent", sentence="none")
    made = _claim("A loaf costs 8.40 EUR", "8.40 EUR", "4.80 EUR", "contradicted")
    reply = _reply(asked, reworded, spanish, made)
    claims = parse_claims(reply, _draft("A loaf costs 8.40 EUR [1].")) or []
    assert [(c.claim, c.standing) for c in claims] == [("A loaf costs 8.40 EUR", "contradicted")]


async def test_figures_the_model_calls_the_same_but_that_differ_are_a_contradiction() -> None:
    said = _claim("A loaf costs 8.40 EUR", "8.40 EUR", "4.80 EUR", "supported")
    llm = ScriptedLLM([turn(text(_reply(said)))])
    report = await ModelClaimCheck(llm).check(_draft("A loaf costs 8.40 EUR [1]."))
    [finding] = report.findings
    assert finding.standing == "contradicted" and finding.evidence.startswith("4.80 EUR")
    assert "8.40" in report.reasons()[0] and "contradicts" in report.reasons()[0]


def test_a_figure_the_model_reads_into_the_evidence_that_it_does_not_state_is_absent() -> None:
    invented = _claim("delivery costs 3 EUR", "3 EUR", "3 EUR", "supported")
    [claim] = parse_claims(_reply(invented), _draft("Delivery costs 3 EUR [1].")) or []
    assert claim.standing == "absent"


def test_a_claim_without_an_evidence_sentence_is_not_supported() -> None:
    nothing = _claim("bakes since 1998", "1998", "", "supported", sentence="none")
    [claim] = parse_claims(_reply(nothing), _draft("It has baked since 1998 [1].")) or []
    assert claim.standing == "absent"


def test_a_figure_computed_from_the_question_and_evidence_is_no_contradiction() -> None:
    # 3 loaves: 3 × 4.80 = 14.40 is one step from the question's and the evidence's figures.
    draft = ClaimDraft(question="What do 3 loaves cost?", draft="14.40 EUR [1].", evidence=EVIDENCE)
    said = _claim("3 loaves cost 14.40 EUR", "14.40 EUR", "4.80 EUR", "supported")
    [claim] = parse_claims(_reply(said), draft) or []
    assert claim.standing == "supported"


async def test_an_unreadable_reply_is_a_report_that_says_so() -> None:
    llm = ScriptedLLM([turn(text("The draft looks right to me."))])
    report = await ModelClaimCheck(llm).check(_draft("A loaf costs 4.80 EUR [1]."))
    assert not report.readable and report.claims == [] and "could not be read" in report.note


def test_a_reply_off_the_schema_reads_as_nothing() -> None:
    assert parse_claims('{"claims": [{"draft_claim": "x", "standing": "maybe"}]}') is None
    assert parse_claims('{"verdict": "OK"}') is None


def test_evidence_splits_into_sentences_after_their_stops() -> None:
    assert sentences(EVIDENCE[0])[:2] == [
        "Crumb Bakery price list.",
        "A sourdough loaf costs 4.80 EUR.",
    ]


async def test_without_evidence_the_model_is_not_asked() -> None:
    llm = ScriptedLLM([])
    check = ModelWithRules(ModelClaimCheck(llm), RulesClaimCheck())
    report = await check.check(_draft("A loaf costs 4.80 EUR.", evidence=[]))
    assert report.claims == [] and llm.requests == []


async def test_the_rules_add_a_finding_the_model_missed_and_never_remove_one() -> None:
    all_fine = _reply(_claim("Orders over 20 EUR ship free", "20 EUR", "20 EUR", "supported"))
    check = ModelWithRules(ModelClaimCheck(ScriptedLLM([turn(text(all_fine))])), RulesClaimCheck())
    report = await check.check(_draft("Orders over 20 EUR are delivered free within the city [1]."))
    assert report.checker == "model+rules"
    assert any("20" in c.claim for c in report.findings)
    flagged = _reply(_claim("A loaf costs 4.80 EUR", "4.80 EUR", "", "absent", sentence="none"))
    check = ModelWithRules(ModelClaimCheck(ScriptedLLM([turn(text(flagged))])), RulesClaimCheck())
    report = await check.check(_draft("A loaf costs 4.80 EUR [1]."))
    assert [c.standing for c in report.findings] == ["absent"]
