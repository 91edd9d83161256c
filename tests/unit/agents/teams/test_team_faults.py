"""An invalid team is refused with every fault named at its place (a JSON pointer)."""

from __future__ import annotations

from typing import Any

import pytest

from agents.teams.check import Allowance, check
from agents.teams.faults import TeamInvalid
from agents.teams.parse import parse_team, team_from_data
from agents.teams.runnable import not_runnable


def faults(data: dict[str, Any], allowance: Allowance | None = None) -> set[tuple[str, str]]:
    found = check(team_from_data(data), allowance or Allowance())
    return {(f.pointer, f.code) for f in found}


def agent(name: str, **more: Any) -> dict[str, Any]:
    return {"name": name, "instructions": f"You are {name}.", **more}


def edge(source: str, to: str, on: str = "answer", **more: Any) -> dict[str, Any]:
    return {"from": source, "on": on, "to": to, **more}


START = edge("intake", "a", on="admitted")


def test_a_path_that_never_reaches_the_finalizer_is_named() -> None:
    data = {"agents": [agent("a"), agent("b")], "edges": [START, edge("a", "b")]}
    assert faults(data) == {("/agents/1", "dead_end")}


def test_a_loop_without_a_bound_is_named_at_its_first_edge() -> None:
    data = {
        "agents": [agent("a"), agent("b")],
        "edges": [START, edge("a", "b"), edge("b", "a"), edge("b", "finalizer")],
    }
    assert ("/edges/1", "unbounded_loop") in faults(data)


def test_a_bounded_loop_needs_a_way_out_after_its_attempts() -> None:
    data = {
        "agents": [agent("a"), agent("b")],
        "edges": [START, edge("a", "b"), edge("b", "a", attempts=2)],
    }
    assert ("/edges/2/attempts", "loop_without_exit") in faults(data)


def test_tools_and_models_the_tenant_does_not_allow_are_named() -> None:
    data = {
        "agents": [agent("a", model="big", tools=["calculator", "shell"])],
        "edges": [START, edge("a", "finalizer")],
    }
    allowance = Allowance(tools=frozenset({"calculator"}), models=frozenset({"small"}))
    assert faults(data, allowance) == {
        ("/agents/0/model", "model_not_allowed"),
        ("/agents/0/tools/1", "tool_not_allowed"),
    }


def test_a_gate_is_refused_where_no_state_store_exists() -> None:
    data = {
        "agents": [agent("a")],
        "edges": [START, edge("a", "answer_gate"), edge("answer_gate", "finalizer", on="approve")],
    }
    assert faults(data) == set()
    assert faults(data, Allowance(store=False)) == {
        ("/edges/1/to", "gate_without_store"),
        ("/edges/2/from", "gate_without_store"),
    }


def test_an_agent_no_path_reaches_is_named() -> None:
    data = {
        "agents": [agent("a"), agent("lonely")],
        "edges": [START, edge("a", "finalizer"), edge("lonely", "finalizer")],
    }
    assert faults(data) == {("/agents/1", "unreachable")}


def test_routes_on_fields_are_checked_against_the_output_schema() -> None:
    schema = {"type": "object", "properties": {"kind": {"enum": ["x", "y"]}}}
    data = {
        "agents": [agent("a", output_schema=schema), agent("b")],
        "edges": [
            START,
            edge("a", "b", match={"field": "kind", "equals": "z"}),
            edge("a", "finalizer", match={"field": "colour", "equals": "x"}),
            edge("b", "finalizer", match={"field": "kind", "equals": "x"}),
        ],
    }
    assert faults(data) == {
        ("/edges/1/match/equals", "value_not_in_enum"),
        ("/edges/2/match/field", "unknown_field"),
        ("/edges/3/match", "match_without_schema"),
        ("/agents/0", "output_not_covered"),
        ("/agents/1", "output_not_covered"),
    }


def test_unknown_nodes_outcomes_conditions_and_sources_are_named() -> None:
    data = {
        "agents": [agent("a", sources=["documents", "wiki"]), agent("critic")],
        "edges": [
            START,
            edge("a", "nowhere"),
            edge("a", "finalizer", on="done", when="sometimes"),
        ],
    }
    assert faults(data) >= {
        ("/agents/0/sources/1", "unknown_source"),
        ("/agents/1/name", "reserved_name"),
        ("/edges/1/to", "unknown_node"),
        ("/edges/2/on", "unknown_outcome"),
        ("/edges/2/when", "unknown_condition"),
    }


def test_an_invalid_output_schema_is_named_inside_it() -> None:
    data = {
        "agents": [agent("a", output_schema={"type": "object", "properties": {"n": {"type": 3}}})],
        "edges": [START, edge("a", "finalizer")],
    }
    found = faults(data)
    assert {code for _, code in found} == {"invalid_schema"}
    assert all(p.startswith("/agents/0/output_schema") for p, _ in found)


def test_a_shape_fault_is_named_with_its_pointer() -> None:
    with pytest.raises(TeamInvalid) as refused:
        parse_team("agents: [{name: A, instructions: ''}]\nedges: [{from: intake, to: x}]\n")
    pointers = {f.pointer for f in refused.value.faults}
    assert pointers == {"/agents/0/name", "/agents/0/instructions", "/edges/0/on"}
    assert refused.value.code == "team_invalid"


def test_text_that_is_not_yaml_is_refused_saying_where() -> None:
    with pytest.raises(TeamInvalid) as refused:
        parse_team("edges: [unclosed\n")
    assert refused.value.faults[0].code == "not_yaml"
    assert "line" in refused.value.faults[0].message


def test_attempts_bound_only_a_declared_agents_edges() -> None:
    # The critic bounds its own send-back; an `attempts` on its edge would bound nothing.
    data = {
        "agents": [agent("a")],
        "edges": [
            START,
            edge("a", "critic"),
            edge("critic", "a", on="ok", attempts=2),
            edge("critic", "finalizer", on="ok"),
        ],
    }
    assert ("/edges/2/attempts", "attempts_on_builtin") in faults(data)


def _runnable(data: dict[str, Any]) -> set[tuple[str, str]]:
    return {(f.pointer, f.code) for f in not_runnable(team_from_data(data))}


def test_a_team_may_run_a_declared_agent_through_the_critic_and_the_verifier() -> None:
    data = {
        "agents": [agent("a")],
        "edges": [
            START,
            edge("a", "critic"),
            edge("critic", "a", on="revise"),
            edge("critic", "verifier", on="ok"),
            edge("verifier", "a", on="revise"),
            edge("verifier", "finalizer", on="pass"),
        ],
    }
    assert faults(data) == set()
    assert _runnable(data) == set()


def test_a_team_run_refuses_the_judges_fact_check_and_a_judge_with_no_way_on() -> None:
    data = {
        "agents": [agent("a")],
        "edges": [
            START,
            edge("a", "critic"),
            edge("critic", "finalizer", on="revise"),
            edge("critic", "finalizer", on="fact_check"),
            edge("critic", "researcher", on="replan"),
            edge("researcher", "finalizer"),
        ],
    }
    assert _runnable(data) == {
        ("/edges/1/to", "judge_without_exit"),  # no `ok` edge: where an approval goes
        ("/edges/3/on", "outcome_not_runnable"),
        ("/edges/4/to", "node_not_runnable"),
        ("/edges/5/from", "node_not_runnable"),
    }


def test_a_team_run_takes_the_answer_gate_after_a_judges_approval_only() -> None:
    gated = [
        START,
        edge("a", "critic"),
        edge("critic", "answer_gate", on="ok"),
        edge("answer_gate", "finalizer", on="approve"),
        edge("answer_gate", "finalizer", on="reject"),
    ]
    assert _runnable({"agents": [agent("a")], "edges": gated}) == set()
    wrong = [
        START,
        edge("a", "answer_gate"),
        edge("answer_gate", "a", on="approve"),
        edge("a", "finalizer"),
    ]
    assert _runnable({"agents": [agent("a")], "edges": wrong}) == {
        ("/edges/1", "gate_not_runnable"),  # not after a judge's approval
        ("/edges/2/to", "gate_not_runnable"),  # back to an agent, not on to the finalizer
        ("/edges", "gate_not_runnable"),  # no edge on reject (nor on approve to the end)
    }


def test_a_team_run_gathers_its_sources_only_before_its_first_agent() -> None:
    gathered = [
        edge("intake", "gather", on="admitted", when="has_sources"),
        edge("intake", "a", on="admitted"),
        edge("gather", "merge", on="gathered"),
        edge("merge", "a", on="merged"),
        edge("a", "finalizer"),
    ]
    assert faults({"agents": [agent("a")], "edges": gathered}) == set()
    assert _runnable({"agents": [agent("a")], "edges": gathered}) == set()
    later = [
        START,
        edge("a", "gather"),
        edge("gather", "merge", on="gathered"),
        edge("merge", "finalizer", on="merged"),
    ]
    assert _runnable({"agents": [agent("a")], "edges": later}) == {
        ("/edges/1", "gather_not_runnable"),  # after an agent: nothing would start it
        ("/edges/3", "gather_not_runnable"),  # merge hands its passages to an agent
    }


def test_a_team_run_reaches_the_gateway_through_an_agents_tools_not_an_edge() -> None:
    data = {
        "agents": [agent("a", tools=["calculator"])],
        "edges": [START, edge("a", "gateway"), edge("gateway", "finalizer", on="research")],
    }
    assert _runnable(data) == {
        ("/edges/1/to", "node_not_runnable"),
        ("/edges/2/from", "node_not_runnable"),
    }
