"""Reading a critique: a verdict and a reason, or unknown, never read as an approval."""

from __future__ import annotations

import json

import pytest

from agents.checks.verdicts import CRITIC_SCHEMA, parse_critique, without_scaffolding


@pytest.mark.parametrize(
    ("reply", "verdict", "reason"),
    [
        ('{"verdict": "OK", "reason": "437 is right"}', "OK", "437 is right"),
        ('```json\n{"verdict": "REVISE", "reason": "no working"}\n```', "REVISE", "no working"),
        ('{"verdict": "replan", "reason": "wrong approach"}', "REPLAN", "wrong approach"),
        # Servers that honour no schema: one leading verdict word still reads.
        ("OK the tool result supports it.", "OK", "the tool result supports it."),
        ("revise: show the working", "REVISE", "show the working"),
        ("  **REPLAN** the plan missed a step", "REPLAN", "** the plan missed a step"),
        ("REVISE", "REVISE", ""),
    ],
)
def test_a_critique_is_a_verdict_and_a_reason(reply: str, verdict: str, reason: str) -> None:
    assert parse_critique(reply) == (verdict, reason)


@pytest.mark.parametrize(
    "reply",
    [
        # The prompt's own instruction read back (issue 28): two verdicts named, not an OK.
        "OK if the answer is correct and supported, REVISE if the plan was sound but ...",
        "Looks right to me.",
        "OKAY, fine",
        "Revised answer is wrong",
        '{"verdict": "maybe", "reason": "?"}',
        "",
    ],
)
def test_an_unreadable_critique_is_unknown_never_ok(reply: str) -> None:
    verdict, reason = parse_critique(reply)
    assert verdict == "UNKNOWN"
    assert reply.strip()[:20] in reason


@pytest.mark.parametrize(
    ("said", "shown"),
    [
        # A small model runs on from its reason into the schema's next field.
        ("The draft gives the wrong year; draft_says]:", "The draft gives the wrong year"),
        ('"reason": the limit is missing', "the limit is missing"),
        ("Wrong total. [evidence_says]: 310 EUR", "Wrong total. 310 EUR"),
        ("draft_says: 12 rooms; evidence_says: 21 rooms", "12 rooms; 21 rooms"),
        # The same words as prose are the reason's own.
        ("The reason is that the verdict: stands", "The reason is that the verdict: stands"),
        ("The draft says 12 rooms:", "The draft says 12 rooms:"),
    ],
)
def test_the_schemas_own_field_names_are_not_part_of_a_reason(said: str, shown: str) -> None:
    assert without_scaffolding(said, CRITIC_SCHEMA) == shown
    reply = json.dumps({"verdict": "REVISE", "reason": said})
    assert parse_critique(reply) == ("REVISE", shown)


@pytest.mark.parametrize(
    ("said", "shown"),
    [
        # A small model copies the claim pairs it read, labels and all.
        ("The draft says: The office opens at 08:30 [1].", "The office opens at 08:30 [1]."),
        (
            "1. The draft says: The office opens at 08:30. The evidence says: The office "
            "opens at 09:00.",
            "The office opens at 08:30. The office opens at 09:00.",
        ),
        (
            "The draft says: Parking is free\n   The evidence says: (nothing about this)",
            "Parking is free",
        ),
        ("Draft answer: the office opens at 08:30", "the office opens at 08:30"),
        ("The draft says:", ""),
        (
            "The draft's claims, each beside the evidence about it (numbered as claims lists "
            "them), are all supported.",
            "The draft's claims are all supported.",
        ),
        # The same words as prose, or a list number that is a figure, are the reason's own.
        (
            "the draft says: 08:30, the evidence says 09:00",
            "the draft says: 08:30, the evidence says 09:00",
        ),
        ("The evidence says nothing about parking.", "The evidence says nothing about parking."),
        ("It opens at 8. The draft says: 9", "It opens at 8. 9"),
    ],
)
def test_the_prompts_own_labels_are_not_part_of_a_reason(said: str, shown: str) -> None:
    assert without_scaffolding(said, CRITIC_SCHEMA) == shown
    reply = json.dumps({"verdict": "OK", "reason": said})
    assert parse_critique(reply) == ("OK", shown)
