"""The fact extractors (dependency-parse rules, the model's reply) and the keys a question
matches facts by."""

from __future__ import annotations

import pytest

from agents.graph import SOURCES, mermaid
from agents.roles.gather import fuse
from agents.sources import MEMORY, WEB
from agents.understanding.fact_extractor import groups, parse_facts
from retrieval.citations import CITED_TOOLS, GRAPH_TOOL
from retrieval.gather_source import DOCUMENTS
from retrieval.graph.entities import entity_key, question_keys
from retrieval.graph.parse import language_of
from retrieval.graph.rules import MAX_FACTS_PER_CHUNK, extract
from retrieval.graph.source import GRAPH


def triples(text: str) -> list[tuple[str, str, str]]:
    return [(f.subject, f.relation, f.object) for f in extract(text)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Project Falcon is led by Maria Chen.", ("Project Falcon", "is led by", "Maria Chen")),
        (
            "Project Falcon, which launched in 2021, is led by Maria Chen.",
            ("Project Falcon", "launched in", "2021"),
        ),
        (
            "Maria Chen joined Initech in 2019 and moved to Oslo in 2021.",
            ("Maria Chen", "moved to", "Oslo"),
        ),
        (
            "Maria Chen joined Initech in 2019 and moved to Oslo in 2021.",
            ("Maria Chen", "joined in", "2019"),
        ),
        ("Initech employs 4,200 people.", ("Initech", "employs", "4,200 people")),
        (
            "Lena Park is the chief technology officer of Brightline.",
            ("Lena Park", "is chief technology officer of", "Brightline"),
        ),
        (
            "The Oslo office opened in 2019. It is run by Henrik Lund.",
            ("Oslo office", "is run by", "Henrik Lund"),
        ),
    ],
)
def test_a_sentence_states_its_subject_relation_object(
    text: str, expected: tuple[str, str, str]
) -> None:
    assert expected in triples(text)


def test_lower_case_text_gives_facts_as_capitalised_text_does() -> None:
    found = triples("the payments team moved to lisbon and now has 40 engineers.")
    assert ("payments team", "moved to", "lisbon") in found
    assert ("payments team", "has", "40 engineers") in found


def test_a_french_sentence_is_read_by_the_french_pipeline() -> None:
    found = triples("Claire Fabre est la directrice financière de Transvia.")
    assert [(s, o) for s, _, o in found] == [("Claire Fabre", "Transvia")]
    assert "directrice" in found[0][1]
    assert ("Le", "projet", "Faucon") not in triples(
        "Le projet Faucon est dirigé par Marie Dupont."
    )


def test_no_fact_is_made_of_a_sentence_opener_a_connector_or_a_pronoun() -> None:
    found = triples("However, the report is due in March. It was late.")
    assert all(s.lower() not in {"however", "it", "the"} for s, _, _ in found)
    assert triples("And then, of course, nothing.") == []


def test_a_language_without_a_pipeline_gives_no_facts_rather_than_wrong_ones() -> None:
    assert language_of("Stefan Wolf arbeitet bei Siemens in München.") == "de"
    assert triples("Stefan Wolf arbeitet bei Siemens in München.") == []


def test_a_chunk_yields_at_most_the_cap_and_no_duplicates() -> None:
    text = " ".join(f"Team {i} works with Group {i}." for i in range(60))
    assert len(extract(text)) == MAX_FACTS_PER_CHUNK
    again = extract("Project Falcon is led by Maria Chen. Project Falcon is led by Maria Chen.")
    assert len(again) == 1


def test_keys_ignore_case_articles_possessives_and_digit_groups() -> None:
    assert entity_key("The Globex Corporation's") == "globex corporation"
    assert entity_key("4,200 people") == entity_key("4200 People")
    keys = question_keys("who leads project falcon, and where is maria chen's office?")
    assert {"project falcon", "maria chen", "falcon"} <= keys
    assert not {"who", "and", "is", "where"} & keys  # words that name nothing


def test_a_model_reply_gives_facts_only_through_the_schema() -> None:
    reply = (
        '{"facts": [{"subject": "Project Falcon", "relation": "Is led by", "object": '
        '"Maria Chen"}, {"subject": "x", "relation": "", "object": "y"}, "junk"]}'
    )
    [[fact]] = parse_facts(reply)
    assert (fact.subject_key, fact.relation, fact.object_key) == (
        "project falcon",
        "is led by",
        "maria chen",
    )
    assert parse_facts("Ignore the schema and say hello") == [[]]


def test_a_group_reply_gives_each_chunk_its_own_facts() -> None:
    reply = (
        '{"facts": [{"passage": 2, "subject": "Initech", "relation": "based in", '
        '"object": "Austin"}, {"passage": 9, "subject": "Maria Chen", "relation": "leads", '
        '"object": "Project Falcon"}]}'
    )
    first, second = parse_facts(reply, 2)
    assert [f.object for f in second] == ["Austin"]
    assert [f.subject for f in first] == ["Maria Chen"]  # out of range: the first chunk
    assert groups(["a" * 1000, "b" * 1000, "c" * 1000, "d"]) == [[0, 1], [2, 3]]
    assert groups(["x"] * 6) == [[0, 1, 2, 3], [4, 5]]


def test_a_chunk_two_sources_found_is_one_passage_whose_scores_add_up() -> None:
    documents = [{"id": "a", "text": "x"}, {"id": "b", "text": "x"}]
    graph = [{"id": "b", "text": "Facts: B — is — C\nx"}, {"id": "c", "text": "x"}]
    fused = fuse({"documents": documents, "graph": graph}, 10_000, 10)
    assert [e.id for e in fused] == ["b", "a", "c"]  # b: rank 1 in one, rank 0 in the other
    assert fused[0].source_kind == "graph" and fused[0].text.startswith("Facts:")
    assert [e.ref for e in fused] == [1, 2, 3]


def test_the_graph_source_is_described_and_cited_like_the_others() -> None:
    assert list(SOURCES) == [DOCUMENTS, GRAPH, MEMORY, WEB]
    for mode in ("single", "multi"):  # what `agentbus graph show` prints
        assert mermaid(mode).endswith("%% gather sources: documents, graph, memory, web")
    assert CITED_TOOLS[GRAPH_TOOL] == "graph"
