"""`agentbus eval facts`: the shipped passages and how an extracted fact is scored."""

from __future__ import annotations

from collections import Counter

from agentbus_evals.fact_set import (
    Passage,
    load_passages,
    same_relation,
    same_thing,
    score_passage,
    score_set,
)
from bus.store.facts import Triple
from retrieval.graph.entities import entity_key


def fact(subject: str, relation: str, obj: str) -> Triple:
    return Triple(subject, entity_key(subject), "name", relation, obj, entity_key(obj), "name")


def test_the_set_has_fifty_passages_in_five_languages_split_dev_and_test() -> None:
    passages = load_passages()
    assert len(passages) >= 50
    assert {p.lang for p in passages} == {"en", "fr", "es", "pt", "de"}
    halves = Counter(p.half for p in passages)
    assert halves["dev"] >= 25 and halves["test"] >= 25
    assert len({p.id for p in passages}) == len(passages)
    assert all(p.facts for p in passages)
    assert load_passages("test") == [p for p in passages if p.half == "test"]


def test_an_end_names_the_same_thing_without_its_article_or_first_name() -> None:
    assert same_thing("the Oslo office", "Oslo office")
    assert same_thing("Chen", "Maria Chen")
    assert same_thing("4200 people", "4,200 people")
    assert same_thing("La empresa Solaria", "Solaria", "es")
    assert not same_thing("Kestrel", "Kestrel Labs Oslo office")
    assert not same_thing("Vantor", "Kestrel Labs")


def test_a_relation_matches_on_a_content_lemma_in_the_passage_language() -> None:
    assert same_relation("is led by", "led by|leads", "en")
    assert same_relation("leads", "led by|leads", "en")
    assert same_relation("dirigée par", "dirigé par", "fr")
    assert not same_relation("is based in", "led by|leads", "en")
    assert not same_relation("at", "in", "en")  # function words alone: the same word only
    assert same_relation("in", "in", "en")


def test_a_fact_a_reader_agrees_with_counts_in_precision_and_recall() -> None:
    passage = Passage(
        id="x",
        half="dev",
        lang="en",
        text="Project Falcon, which launched in 2021, is led by Maria Chen.",
        facts=[
            ("Project Falcon", "launched in", "2021"),
            ("Project Falcon", "led by", "Maria Chen"),
        ],
    )
    found = [
        fact("Maria Chen", "leads", "Project Falcon"),  # the ends swapped, said actively
        fact("Maria Chen", "which launched in", "2021"),  # what the old rules said
    ]
    scored = score_passage(passage, found)
    assert (scored.extracted, scored.agreed, scored.gold, scored.found) == (2, 1, 2, 1)
    assert scored.wrong == ["Maria Chen | which launched in | 2021"]
    assert scored.missed == ["Project Falcon | launched in | 2021"]
    total = score_set([scored])
    assert (total.precision, total.recall) == (0.5, 0.5)
    assert score_set([score_passage(passage, [])]).precision == 0.0
