"""Team documents: the shipped modes are the graphs the roles run; the examples pass."""

from __future__ import annotations

from pathlib import Path

import pytest

from agents import graph
from agents.teams import draw
from agents.teams.check import Allowance, check
from agents.teams.parse import parse_team
from agents.teams.shipped import SHIPPED, graph_edges, shipped

EXAMPLES = Path(__file__).parents[4] / "docs" / "teams"


@pytest.mark.parametrize(("name", "edges"), [("single", graph.SINGLE), ("multi", graph.MULTI)])
def test_a_shipped_mode_is_the_graph_its_roles_run(
    name: str, edges: tuple[graph.Edge, ...]
) -> None:
    assert graph_edges(shipped(name)) == edges


@pytest.mark.parametrize("name", SHIPPED)
def test_the_check_accepts_the_shipped_modes(name: str) -> None:
    assert check(shipped(name), Allowance()) == []


def test_custom_mode_still_runs_the_multi_graph() -> None:
    assert graph.GRAPHS["custom"] == graph_edges(shipped("multi"))


@pytest.mark.parametrize("name", ["translate", "triage", "review", "checked"])
def test_the_documented_example_teams_pass_the_check(name: str) -> None:
    doc = parse_team((EXAMPLES / f"{name}.yaml").read_text())
    assert doc.name == name
    assert check(doc, Allowance(tools=frozenset(), models=frozenset())) == []


def test_yaml_on_is_a_key_not_true() -> None:
    doc = parse_team("edges:\n  - {from: intake, on: admitted, to: finalizer}\n")
    assert doc.edges[0].on == "admitted"


def test_json_is_read_as_well_as_yaml() -> None:
    doc = parse_team('{"edges": [{"from": "intake", "on": "admitted", "to": "finalizer"}]}')
    assert (doc.edges[0].source, doc.edges[0].to) == ("intake", "finalizer")


def test_a_team_is_drawn_with_its_agents_matches_and_bounds() -> None:
    drawn = draw.mermaid(parse_team((EXAMPLES / "review.yaml").read_text()))
    assert drawn.splitlines()[0] == "flowchart LR"
    assert "    reviewer([reviewer])" in drawn
    assert "    reviewer -->|answer verdict=revise ≤2| writer" in drawn
    assert "    reviewer -->|answer| finalizer" in drawn


@pytest.mark.parametrize("name", ["translate", "triage", "review", "checked"])
def test_docs_show_each_example_team_as_it_is_tested(name: str) -> None:
    page = (EXAMPLES.parent / "teams.md").read_text()
    assert (EXAMPLES / f"{name}.yaml").read_text().rstrip() in page
