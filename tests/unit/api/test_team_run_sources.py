"""Which sources a team run that names none of its own gathers: what its first declared
agent (the one the merge leads to) declares, of the sources that exist for the run; and
which retrieval tools an agent that declares sources is offered."""

from __future__ import annotations

from typing import Any

from api.app.team_runs import sources_for
from bus.team_run import PinnedTeam
from gateway.tools.retrieval_tool import reads_declared

EXISTING = ["documents", "graph", "memory"]


def team(first: list[str], later: list[str] | None = None) -> PinnedTeam:
    agents: list[dict[str, Any]] = [
        {"name": "writer", "instructions": "Write.", "sources": first},
        {"name": "editor", "instructions": "Edit.", "sources": later or []},
    ]
    return PinnedTeam(
        name="t",
        version=1,
        document={
            "agents": agents,
            "edges": [
                {"from": "intake", "on": "admitted", "to": "gather", "when": "has_sources"},
                {"from": "intake", "on": "admitted", "to": "writer"},
                {"from": "gather", "on": "gathered", "to": "merge"},
                {"from": "merge", "on": "merged", "to": "writer"},
                {"from": "writer", "on": "answer", "to": "editor"},
                {"from": "editor", "on": "answer", "to": "finalizer"},
            ],
        },
    )


def test_the_first_agents_declared_sources_that_exist_are_gathered() -> None:
    assert sources_for(team(["memory", "documents", "web"]), EXISTING) == ["memory", "documents"]


def test_an_agent_that_declares_none_gathers_what_exists() -> None:
    assert sources_for(team([], ["web"]), EXISTING) == EXISTING


def test_a_later_agents_sources_are_not_gathered_before_the_first() -> None:
    assert sources_for(team(["documents"], ["memory"]), EXISTING) == ["documents"]


def test_a_team_without_a_gather_declares_nothing_to_gather() -> None:
    plain = PinnedTeam(
        name="t",
        version=1,
        document={
            "agents": [{"name": "a", "instructions": "A.", "sources": ["memory"]}],
            "edges": [
                {"from": "intake", "on": "admitted", "to": "a"},
                {"from": "a", "on": "answer", "to": "finalizer"},
            ],
        },
    )
    assert sources_for(plain, EXISTING) == EXISTING


def test_an_agent_searches_the_documents_only_when_its_sources_name_them() -> None:
    assert reads_declared("search_docs", []) and reads_declared("search_docs", ["documents"])
    assert not reads_declared("search_docs", ["memory", "graph"])
    assert reads_declared("query_graph", ["graph"]) and reads_declared("query_graph", ["documents"])
    assert not reads_declared("query_graph", ["web"])
    assert reads_declared("calculator", ["memory"])
