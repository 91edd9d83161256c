"""Where a declared agent's answer goes: edges in order, `when`, `match` on a field, and
`attempts` used up; and how the built-in nodes of a team run are routed."""

from __future__ import annotations

import pytest

from agents import graph
from agents.teams.document import TeamDocument
from agents.teams.route import NoRoute, route
from bus.keys import Role
from bus.run_state import RunSettings
from bus.team_run import PinnedTeam

DOC = {
    "agents": [
        {
            "name": "judge",
            "instructions": "Judge.",
            "output_schema": {
                "type": "object",
                "properties": {"ok": {"type": "boolean"}, "score": {"type": "integer"}},
            },
        },
        {"name": "fixer", "instructions": "Fix."},
    ],
    "edges": [
        {"from": "intake", "on": "admitted", "to": "judge"},
        {
            "from": "judge",
            "on": "answer",
            "match": {"field": "ok", "equals": True},
            "to": "finalizer",
        },
        {"from": "judge", "on": "answer", "when": "accurate", "to": "fixer"},
        {"from": "judge", "on": "answer", "to": "fixer", "attempts": 2},
        {"from": "judge", "on": "answer", "to": "finalizer"},
        {"from": "fixer", "on": "answer", "to": "judge"},
    ],
}
TEAM = PinnedTeam(name="t", version=1, document=DOC)
SETTINGS = RunSettings(mode="custom", team=TEAM)


def go(output: dict[str, object] | None, taken: dict[str, int] | None = None, **s: object) -> str:
    settings = SETTINGS.model_copy(update=s)
    return route(TeamDocument.model_validate(DOC), settings, "judge", output, taken or {}).to


def test_a_matching_field_takes_its_edge_and_a_number_is_not_true() -> None:
    assert go({"ok": True}) == "finalizer"
    assert go({"ok": 1}) == "fixer"  # JSON 1 is not true: the bounded loop takes it


def test_a_condition_is_read_from_the_runs_settings() -> None:
    hop = route(
        TeamDocument.model_validate(DOC),
        SETTINGS.model_copy(update={"accuracy": "accurate"}),
        "judge",
        {},
        {},
    )
    assert (hop.index, hop.to, hop.bounded) == (2, "fixer", False)


def test_a_bounded_edge_is_taken_until_its_attempts_are_used_then_the_next() -> None:
    assert go({}, {"3": 1}) == "fixer"
    assert go({}, {"3": 2}) == "finalizer"


def test_an_answer_no_edge_takes_is_no_route() -> None:
    doc = TeamDocument.model_validate({**DOC, "edges": DOC["edges"][:2]})
    with pytest.raises(NoRoute):
        route(doc, SETTINGS, "judge", {"ok": False}, {})


def test_the_built_in_nodes_of_a_team_run_follow_the_teams_edges() -> None:
    assert graph.next_node(SETTINGS, "intake", "admitted") == "judge"
    assert graph.next_role(SETTINGS, "intake", "admitted") == Role.AGENT
    # A declared agent's tool loop goes to the gateway and back without edges.
    assert graph.next_role(SETTINGS, graph.TEAM_AGENT, "tool_calls") == Role.GATEWAY
    assert graph.next_role(SETTINGS, "gateway", "agent") == Role.AGENT
    assert not graph.has_edge(SETTINGS, "gateway", "research")
