"""The memory rules: what a question says about its user in five languages, and what it does
not (requests, questions, hypotheticals, other people, negations, quoted words).

The sentences here are not the eval set's: the rules are scored on that set, not fitted to it.
"""

from __future__ import annotations

import pytest

from agents.understanding.memory.rules import Statement, extract, worth_remembering


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        (
            "I work in the Faro office. What's on the lunch menu?",
            [Statement("workplace", "The user works in the Faro office.")],
        ),
        ("I'm a tax adviser.", [Statement("is adviser", "The user is a tax adviser.")]),
        ("I live in Oslo", [Statement("home", "The user lives in Oslo.")]),
        ("Call me Bea.", [Statement("name", "Call the user Bea.")]),
        ("Please answer in Italian", [Statement("language", "Answer the user in Italian.")]),
        (
            "Remember that I prefer long answers",
            [Statement("answer_style", "The user prefers long answers.")],
        ),
        ("I use Rust and SQLite.", [Statement("tools", "The user uses Rust and SQLite.")]),
        ("My time zone is PST.", [Statement("timezone", "The user's time zone is PST.")]),
    ],
)
def test_english_statements_are_kept_in_the_third_person(
    question: str, expected: list[Statement]
) -> None:
    assert extract(question) == expected


@pytest.mark.parametrize(
    ("question", "topic", "text"),
    [
        ("Trabalho na Galp.", "workplace", "Trabalho na Galp."),
        ("Eu moro em Setúbal.", "home", "Eu moro em Setúbal."),
        ("Vivo en Cádiz.", "home", "Vivo en Cádiz."),
        ("Uso Emacs a diario.", "tools", "Uso Emacs a diario."),
        ("J'habite à Lille.", "home", "J'habite à Lille."),
        ("Je travaille chez Thales.", "workplace", "Je travaille chez Thales."),
        ("Ich wohne in Dresden.", "home", "Ich wohne in Dresden."),
        ("Ich heiße Lena.", "name", "Ich heiße Lena."),
    ],
)
def test_other_languages_keep_the_users_own_words_never_half_translated(
    question: str, topic: str, text: str
) -> None:
    assert extract(question) == [Statement(topic, text)]


@pytest.mark.parametrize(
    "question",
    [
        "Responde em inglês.",
        "Respóndeme en francés.",
        "Réponds-moi en allemand.",
        "Antworte auf Englisch.",
    ],
)
def test_the_answer_language_is_kept_by_its_english_name(question: str) -> None:
    [statement] = extract(question)
    assert statement.topic == "language" and statement.text.startswith("Answer the user in ")


@pytest.mark.parametrize(
    "question",
    [
        # requests
        "I want to know the expense limits.",
        "I need the onboarding checklist.",
        "Quero ver o mapa de férias.",
        "Necesito la plantilla de facturas.",
        "Je veux le calendrier des fêtes.",
        "Ich brauche den Dienstplan.",
        # questions
        "Do I live in Oslo?",
        "Where do I work?",
        "Moro em Faro?",
        "¿Dónde vivo?",
        "Est-ce que je travaille à Lille ?",
        "Wo wohne ich?",
        # hypotheticals
        "If I lived in Oslo, what would I pay?",
        "Se eu trabalhasse na Galp, teria seguro?",
        "Wenn ich in Dresden arbeite, wie komme ich hin?",
        # someone else
        "My brother lives in Oslo.",
        "Mi jefa vive en Cádiz.",
        "Mon collègue travaille chez Thales.",
        "Paula works at Galp.",
        # negations
        "I don't live in Oslo.",
        "Não trabalho na Galp.",
        "Je ne travaille pas chez Thales.",
        "Ich wohne nicht in Dresden.",
        # quoted and to translate
        "Translate 'I work at Galp' into French.",
        "What does „Ich wohne in Dresden“ mean?",
    ],
)
def test_requests_questions_hypotheticals_others_negations_and_quotes_keep_nothing(
    question: str,
) -> None:
    assert extract(question) == []


def test_a_correction_keeps_the_new_fact_on_its_topic() -> None:
    assert extract("Correction: I live in Bergen now, not Oslo.") == [
        Statement("home", "The user lives in Bergen now.")
    ]


def test_two_statements_in_one_sentence_are_both_kept() -> None:
    found = extract("I work in the Faro office and please answer in Spanish.")
    assert {s.topic for s in found} == {"workplace", "language"}


@pytest.mark.parametrize(
    "question",
    [
        "I work in the Faro office.",
        "Trabajo en Cádiz.",
        "Sou contabilista.",
        "Je travaille chez Thales.",
        "Ich wohne in Dresden.",
        "Please keep the answers brief.",
        "Responde sempre em inglês.",
    ],
)
def test_the_first_pass_lets_statements_through(question: str) -> None:
    assert worth_remembering(question)


@pytest.mark.parametrize(
    "question", ["What is 23 × 19?", "How many days of leave are there?", "Wie spät ist es?"]
)
def test_the_first_pass_stops_a_question_that_says_nothing_of_its_user(question: str) -> None:
    assert not worth_remembering(question)
