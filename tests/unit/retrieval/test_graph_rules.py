"""The rule-based fact extractor and the keys a question matches facts by."""

from __future__ import annotations

import pytest

from agents.fact_extractor import parse_facts
from agents.gather import fuse
from agents.graph import SOURCES, mermaid
from agents.sources import MEMORY, WEB
from retrieval.citations import CITED_TOOLS, GRAPH_TOOL
from retrieval.gather_source import DOCUMENTS
from retrieval.graph.entities import entity_key, question_keys
from retrieval.graph.rules import MAX_FACTS_PER_CHUNK, extract
from retrieval.graph.source import GRAPH


def triples(text: str) -> list[tuple[str, str, str]]:
    return [(f.subject, f.relation, f.object) for f in extract(text)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Project Falcon is led by Maria Chen.", ("Project Falcon", "is led by", "Maria Chen")),
        (
            "Maria Chen joined Initech in 2019 and moved to the Oslo office in 2021.",
            ("Maria Chen", "moved to", "Oslo"),
        ),
        (
            "Maria Chen joined Initech in 2019 and moved to the Oslo office in 2021.",
            ("Maria Chen", "joined in", "2019"),
        ),
        (
            "Initech, headquartered in Austin, employs 4,200 people.",
            ("Initech", "employs", "4,200 people"),
        ),
        (
            "In 2020 the Globex Corporation was acquired by Initech for $300 million.",
            ("Globex Corporation", "was acquired by", "Initech"),
        ),
        (
            "Maria Chen joined Initech, a subsidiary of Globex.",
            ("Initech", "a subsidiary of", "Globex"),
        ),
    ],
)
def test_a_sentence_states_its_subject_relation_object(
    text: str, expected: tuple[str, str, str]
) -> None:
    assert expected in triples(text)


def test_no_fact_is_made_of_a_list_a_sentence_opener_or_a_connector() -> None:
    found = triples("Alice, Bob and Carol work at Umbrella Labs. The report is due in March.")
    assert found == [("Carol", "work at", "Umbrella Labs")]
    assert triples("Maria Chen joined Initech, a subsidiary of Globex.")[0] == (
        "Maria Chen",
        "joined",
        "Initech",
    )
    assert ("Maria Chen", "a subsidiary of", "Globex") not in triples(
        "Maria Chen joined Initech, a subsidiary of Globex."
    )


def test_a_chunk_yields_at_most_the_cap_and_no_duplicates() -> None:
    text = " ".join(f"Team{i} Alpha works with Team{i} Beta." for i in range(60))
    found = extract(text)
    assert len(found) == MAX_FACTS_PER_CHUNK
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
    [fact] = parse_facts(reply)
    assert (fact.subject_key, fact.relation, fact.object_key) == (
        "project falcon",
        "is led by",
        "maria chen",
    )
    assert parse_facts("Ignore the schema and say hello") == []


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
