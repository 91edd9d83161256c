"""Words as the judges' rules read them: lemmas, function words, numbers written in words,
and the rules that stand on them (examples made up, no case of an eval set)."""

from __future__ import annotations

import pytest

from agents.understanding.claims import grounding
from agents.understanding.claims.contradictions import contradictions
from agents.understanding.language.limits import limits
from agents.understanding.language.names import documents, names, spans
from agents.understanding.language.numbers import with_digits
from agents.understanding.language.words import content_words, language, lemma


@pytest.mark.parametrize(
    ("text", "lang"),
    [
        ("The museum opens at nine on weekdays.", "en"),
        ("O museu abre às nove nos dias úteis.", "pt"),
        ("El museo abre a las nueve los días laborables.", "es"),
        ("Le musée ouvre à neuf heures en semaine.", "fr"),
        ("Das Museum öffnet werktags um neun Uhr.", "de"),
    ],
)
def test_the_language_of_a_text_is_recognised(text: str, lang: str) -> None:
    assert language(text) == lang


def test_a_lemma_folds_inflections_that_a_prefix_would_confuse() -> None:
    assert lemma("holidays", "en") == lemma("holiday", "en") == "holiday"
    assert lemma("running", "en") == "run"
    # Four-letter prefixes made these one word; lemmas keep them apart.
    assert lemma("terminal", "en") != lemma("terms", "en")


def test_content_words_drop_each_languages_function_words() -> None:
    assert content_words("The paintings of the museum") == ["painting", "museum"]
    assert "das" not in content_words("Das Museum hat zwölf Räume", "de")
    assert "museum" in content_words("Das Museum hat zwölf Räume", "de")


@pytest.mark.parametrize(
    ("text", "digits"),
    [
        ("twenty-one rooms", "21 rooms"),
        ("vinte e uma salas", "21 salas"),
        ("one of the rooms", "one of the rooms"),  # a lone "one" stays a word
    ],
)
def test_numbers_written_in_words_read_as_digits(text: str, digits: str) -> None:
    assert with_digits(text) == digits


EVIDENCE = [
    "Museum floor plan. The first floor has 21 rooms of paintings. The second floor has 9 suites."
]


def test_a_figure_written_in_words_that_the_evidence_states_differently_is_a_contradiction() -> (
    None
):
    found = contradictions("The first floor has twelve rooms of paintings [1].", "", EVIDENCE, [])
    assert found == ["12 rooms of paintings (the evidence states 21 rooms of paintings)"]


def test_the_same_figure_in_words_and_another_inflection_is_no_contradiction() -> None:
    said = "The first floor has twenty-one rooms of painting [1]."
    assert contradictions(said, "", EVIDENCE, []) == []


def test_a_contradiction_in_portuguese_is_found_with_portuguese_words() -> None:
    evidence = ["Guia do museu. O primeiro andar tem 21 salas de exposição."]
    found = contradictions("O primeiro andar tem 12 salas de exposição [1].", "", evidence, [])
    assert found and "21 salas" in found[0]


def test_a_clause_of_the_draft_no_word_of_which_the_evidence_holds_is_flagged() -> None:
    question = "How many rooms are on the first floor of the museum?"
    draft = "The first floor has 21 rooms [1]; the curator restored tapestries recently."
    [clause] = grounding.unsupported_clauses(draft, question, EVIDENCE)
    assert "tapestries" in clause


def test_a_clause_in_other_inflections_of_the_evidences_words_is_not_flagged() -> None:
    question = "How many rooms of paintings are on the first floor of the museum?"
    draft = "Twenty-one rooms of paintings are on the museum's first floor [1]."
    assert grounding.unsupported_clauses(draft, question, EVIDENCE) == []
    assert grounding.mismatches(draft, question, EVIDENCE, []) == []


def test_a_figure_from_a_clause_naming_what_the_question_asks_is_not_misattributed() -> None:
    evidence = ["Cinema times. The early show opens at 18:00 and the late show at 21:30."]
    question = "When does the late show start?"
    assert (
        grounding.misattributed("The late show starts at 21:30 [1].", question, evidence, []) == []
    )
    wrong = grounding.misattributed("The late show starts at 18:00 [1].", question, evidence, [])
    assert wrong == ["1080 (the evidence gives 1290 for this)"]  # minutes: 18:00, 21:30


@pytest.mark.parametrize(
    ("text", "lang", "named"),
    [
        # Names the lexicon does not define, or holds as proper nouns, whatever their case.
        ("The ferry to kelsby is run by Okafor Lines.", "en", {"kelsby", "okafor"}),
        ("Our office in Lisbon opens on Tuesday.", "en", {"lisbon", "tuesday"}),
        # German capitalises every noun; only a word its lexicon lacks names something.
        ("Die Fähre nach Nordstrand fährt am Dienstag.", "de", {"nordstrand", "tuesday"}),
        ("A loja abre na terça-feira, no Lusoflex.", "pt", {"tuesday", "lusoflex"}),
        ("L'abonnement part de Lyon-Part-Dieu jusqu'à lundi.", "fr", {"lyon-part-dieu", "monday"}),
        ("Refunds for the early-bird ticket are paid in March.", "en", {"march"}),
    ],
)
def test_names_are_read_from_the_lexicon_and_the_calendar_not_from_capitals(
    text: str, lang: str, named: set[str]
) -> None:
    assert names(text, lang) == named


@pytest.mark.parametrize(
    ("text", "lang", "found"),
    [
        ("Bikes are lent to members only, for up to 3 hours.", "en", ["only", "up to"]),
        ("O reembolso é pago apenas aos sócios, no máximo 30 EUR.", "pt", ["apenas", "no máximo"]),
        (
            "Die Fähre nimmt höchstens 40 Fahrräder mit, außer sonntags.",
            "de",
            ["höchstens", "außer"],
        ),
        ("Le musée est gratuit sauf le dimanche.", "fr", ["sauf"]),
        ("The museum is free on Sundays.", "en", []),
    ],
)
def test_limits_are_each_languages_own_words(text: str, lang: str, found: list[str]) -> None:
    assert limits(text, lang) == found


def test_name_spans_keep_adjacent_name_words_together() -> None:
    # "Lines" is an English word; after a name it is part of the name.
    assert spans("The ferry is run by Okafor Lines from kelsby on Tuesday.", "en") == [
        "Okafor Lines",
        "kelsby",
        "tuesday",
    ]
    assert spans("Tomas Berg leads it.", "en") == ["Tomas Berg"]
    assert spans("Le bac part de Lyon-Part-Dieu.", "fr") == ["Lyon-Part-Dieu"]


@pytest.mark.parametrize(
    ("text", "lang", "named", "owned"),
    [
        ("According to the staff handbook, when do I get paid?", "en", True, True),
        ("What do our policies say about bikes?", "en", True, True),
        ("What is a policy?", "en", True, False),
        ("O que diz o nosso regulamento sobre bicicletas?", "pt", True, True),
        ("Was steht laut Handbuch zum Urlaub?", "de", True, False),
        ("What is 12 times 7?", "en", False, False),
    ],
)
def test_documents_are_named_in_each_languages_words(
    text: str, lang: str, named: bool, owned: bool
) -> None:
    assert documents(text, lang) is named
    assert documents(text, lang, owned=True) is owned


def test_a_condition_is_a_limit() -> None:
    assert limits("Bikes travel free if the ferry is not full.", "en") == ["if"]
    assert limits("Fahrräder fahren gratis, falls Platz ist.", "de") == ["falls"]
