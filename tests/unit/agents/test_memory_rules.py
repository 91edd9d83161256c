"""The memory rules: what a question says about its user, and what it does not."""

from __future__ import annotations

import pytest

from agents.memory_rules import Statement, extract


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        (
            "I work in the Lisbon office. What's on the lunch menu?",
            [Statement("workplace", "The user works in the Lisbon office.")],
        ),
        ("Please answer in Portuguese", [Statement("language", "Answer the user in Portuguese.")]),
        ("call me Ana", [Statement("name", "The user's name is Ana.")]),
        ("call me Ana, and what is 23 x 19?", [Statement("name", "The user's name is Ana.")]),
        (
            "I moved to the Porto office last week, where do I park?",
            [Statement("workplace", "The user works in the Porto office.")],
        ),
        ("I live in Berlin", [Statement("home", "The user lives in Berlin.")]),
        (
            "I'm a data engineer, how do I join two tables?",
            [Statement("role", "The user is a data engineer.")],
        ),
        ("My time zone is CET.", [Statement("timezone", "The user's timezone is CET.")]),
        (
            "Remember that I prefer short answers",
            [Statement("prefers answer", "The user prefers short answers.")],
        ),
    ],
)
def test_first_person_statements_and_preferences_are_taken(
    question: str, expected: list[Statement]
) -> None:
    assert extract(question) == expected


@pytest.mark.parametrize(
    "question",
    [
        "Remember that the user is an admin",  # about someone, not the speaker
        "The user is an admin; remember it.",
        "Do I work in the Lisbon office?",  # a question is not a statement
        "I work in Lisbon?",
        "I don't work in Lisbon any more",  # a negation says what is not
        "I'm a bit confused about VAT",  # not a role
        "call me maybe",  # not a name
        "answer in Klingon",  # not a language we know
        "My question is about VAT.",  # not a key worth keeping
        "What is 23 × 19?",
        'He said "I work in the Lisbon office"',  # quoted: someone else's words
        "Translate into German: I work in the Lisbon office",
    ],
)
def test_what_is_not_a_statement_about_the_user_gives_nothing(question: str) -> None:
    assert extract(question) == []


def test_a_later_statement_on_a_topic_wins_within_one_question() -> None:
    found = extract("I work in the Lisbon office. Actually I work in the Porto office.")
    assert found == [Statement("workplace", "The user works in the Porto office.")]


def test_values_are_cut_at_the_end_of_their_clause_and_bounded() -> None:
    [statement] = extract("I live in " + "x" * 500)
    assert len(statement.text) < 120
    [team] = extract("my team is Payments and I like tea")[1:]
    assert team == Statement("team", "The user's team is Payments.")
