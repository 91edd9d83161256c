"""A figure the evidence states differently for the same thing
(`agents.understanding.claims.contradictions`): each figure is said of its own conjunct's
subject, not of the nearest word. The examples are made up, no case of an eval set."""

from __future__ import annotations

from agents.understanding.claims.contradictions import contradictions
from agents.understanding.language.clauses import conjuncts

TICKETS = "Museum tickets. Entry costs 12 EUR for adults and 7 EUR for children."
ASKED = "How much more does entry cost for adults than for children?"


def test_a_figure_said_before_the_next_conjunct_is_not_read_as_said_of_it() -> None:
    # "12 EUR, and for children 7 EUR": 12 is said of adults; the words after the comma
    # belong to the next figure.
    right = "Entry for adults costs 12 EUR, and for children 7 EUR, so 5 EUR more."
    assert contradictions(right, ASKED, [TICKETS], []) == []


def test_a_figure_given_to_the_wrong_subject_is_a_contradiction() -> None:
    [found] = contradictions("Entry for children costs 12 EUR.", ASKED, [TICKETS], [])
    assert found.startswith("12 EUR")
    assert "the evidence states 7 EUR for children" in found
    [found] = contradictions("Adults pay 7 EUR to enter.", ASKED, [TICKETS], [])
    assert "the evidence states 12 EUR for adults" in found


def test_a_subject_said_once_holds_for_each_conjunct_after_it() -> None:
    # "Entry costs" is the subject of both figures: a draft about the entry price of
    # children is about the evidence's 7, not about every entry price.
    assert contradictions("Children's entry costs 7 EUR.", ASKED, [TICKETS], []) == []


def test_conjuncts_split_at_commas_and_coordinators_but_not_inside_a_number() -> None:
    sentence = "Rent is 1,250 EUR in Porto, 1,600 EUR in Lisbon and 900 EUR in Braga"
    parts = [sentence[a:b] for a, b in conjuncts(sentence, "en")]
    assert parts == ["Rent is 1,250 EUR in Porto", "1,600 EUR in Lisbon", "900 EUR in Braga"]
    frase = "A entrada custa 12 EUR para adultos e 7 EUR para crianças"
    assert [frase[a:b] for a, b in conjuncts(frase, "pt")][1] == "7 EUR para crianças"


def test_a_rate_or_an_average_of_the_figures_compared_is_no_contradiction() -> None:
    log = "Survey log. The boat covered 126 nautical miles in 9 days."
    asked = "How far did the boat go per day?"
    assert contradictions("It covered 14 nautical miles a day.", asked, [log], []) == []
    floors = "The hostel has 18 beds on the first floor and 22 beds on the second floor."
    assert (
        contradictions("It has 20 beds per floor on average.", "Beds per floor?", [floors], [])
        == []
    )
    # A figure that is neither their rate nor their total or mean still contradicts them.
    [found] = contradictions("It covered 15 nautical miles a day.", asked, [log], [])
    assert "the evidence states 126 nautical miles" in found
