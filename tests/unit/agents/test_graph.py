"""The agent graph: routing by mode, accuracy and gates, the fact-check's routes, Mermaid."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agents import graph
from bus.commands import RunSettings
from bus.keys import Role


def settings(**values: Any) -> RunSettings:
    return RunSettings.model_validate({"mode": "multi", **values})


def test_single_mode_routes_researcher_to_gateway_and_finalizer() -> None:
    s = RunSettings(mode="single")
    assert graph.next_role(s, "intake", "admitted") == Role.RESEARCHER
    assert graph.next_role(s, "researcher", "tool_calls") == Role.GATEWAY
    assert graph.next_role(s, "gateway", "research") == Role.RESEARCHER
    assert graph.next_role(s, "researcher", "answer") == Role.FINALIZER
    with pytest.raises(graph.NoEdge):
        graph.next_node(s, "critic", "ok")
    assert not graph.has_edge(s, "researcher", "egress_blocked")  # no gates in single mode


def test_single_mode_with_sources_gathers_its_context_before_the_researcher() -> None:
    s = RunSettings(mode="single", sources=["documents"])
    assert graph.next_node(s, "intake", "admitted") == "gather"
    assert graph.next_node(s, "gather", "gathered") == "merge"
    assert graph.next_role(s, "merge", "merged") == Role.RESEARCHER
    assert graph.next_role(s, "researcher", "answer") == Role.FINALIZER


@pytest.mark.parametrize(
    ("accuracy", "gate", "after_critic"),
    [
        ("standard", False, "finalizer"),
        ("standard", True, "answer_gate"),
        ("accurate", False, "verifier"),
        ("accurate", True, "verifier"),
    ],
)
def test_multi_mode_critic_ok_goes_where_accuracy_and_gate_say(
    accuracy: str, gate: bool, after_critic: str
) -> None:
    s = settings(accuracy=accuracy, human_gate=gate)
    assert graph.next_node(s, "critic", "ok") == after_critic
    assert graph.next_node(s, "critic", "replan") == "planner"


def test_planner_gathers_only_when_sources_exist() -> None:
    assert graph.next_node(settings(), "planner", "planned") == "researcher"
    with_sources = settings(sources=["documents"])
    assert graph.next_node(with_sources, "planner", "planned") == "gather"
    assert graph.next_role(with_sources, "gather", "gathered") == Role.RETRIEVAL
    assert graph.next_node(with_sources, "gather", "gathered") == "merge"
    assert graph.next_role(with_sources, "merge", "merged") == Role.RESEARCHER


@pytest.mark.parametrize(("accuracy", "judge"), [("standard", "critic"), ("accurate", "verifier")])
def test_the_last_judge_owns_the_fact_check_and_its_routes_come_back_to_it(
    accuracy: str, judge: str
) -> None:
    s = settings(accuracy=accuracy, sources=["documents"])
    other = "verifier" if judge == "critic" else "critic"
    assert graph.has_edge(s, judge, "recheck") and graph.has_edge(s, judge, "fact_check")
    assert not graph.has_edge(s, other, "recheck") and not graph.has_edge(s, other, "fact_check")
    assert graph.next_node(s, judge, "recheck") == "gather"
    assert graph.next_node(s, "merge", "rechecked") == judge
    assert graph.next_role(s, judge, "fact_check") == Role.GATEWAY
    assert graph.next_node(s, "gateway", "fact_check") == judge


def test_the_fact_check_parts_follow_the_settings() -> None:
    assert not graph.has_edge(settings(), "critic", "recheck")  # no sources to re-query
    assert graph.has_edge(settings(), "critic", "fact_check")
    assert not graph.has_edge(settings(use_tools=False), "critic", "fact_check")
    off = settings(verifier_check=False, sources=["documents"])
    assert not graph.has_edge(off, "critic", "recheck")
    assert not graph.has_edge(off, "critic", "fact_check")


@pytest.mark.parametrize("mode", ["single", "multi", "custom"])
def test_a_done_run_goes_to_the_memory_role_only_with_memory_on(mode: str) -> None:
    assert graph.next_role(settings(mode=mode, memory=True), "finalizer", "done") == Role.MEMORY
    assert not graph.has_edge(settings(mode=mode, memory=False), "finalizer", "done")


def test_every_edge_names_known_nodes_and_conditions() -> None:
    gates = {"answer_gate", "egress_gate", "client_tool_gate"}
    for mode, edges in graph.GRAPHS.items():
        for e in edges:
            assert {e.source, e.target} <= set(graph.NODE_ROLES) | gates, (mode, e)
            assert e.when is None or e.when in graph.CONDITIONS, (mode, e)


def test_mermaid_draws_the_reachable_topology_fact_check_and_fan_out_included() -> None:
    standard = graph.mermaid("multi", "standard")
    assert "critic -->|recheck [standard_recheck]| gather" in standard
    assert "merge -->|rechecked [standard]| critic" in standard
    assert "critic -->|fact_check [standard_tool_check]| gateway" in standard
    assert "gateway -->|fact_check [standard]| critic" in standard
    assert "planner -->|planned [has_sources]| gather" in standard
    assert "gather -->|gathered| merge" in standard
    assert "verifier" not in standard  # unreachable at standard accuracy
    accurate = graph.mermaid("multi", "accurate")
    assert "critic -->|ok [accurate]| verifier" in accurate
    assert "gateway -->|fact_check [accurate]| verifier" in accurate
    assert "fact_check [standard" not in accurate  # the critic does not fact-check here
    single = graph.mermaid("single")
    assert single.splitlines()[1:] == [
        "    intake -->|admitted [has_sources]| gather",
        "    intake -->|admitted [no_sources]| researcher",
        "    gather -->|gathered| merge",
        "    merge -->|merged| researcher",
        "    researcher -->|tool_calls| gateway",
        "    gateway -->|research| researcher",
        "    researcher -->|client_tool| client_tool_gate",
        "    client_tool_gate -->|result| gateway",
        "    researcher -->|answer| finalizer",
        "    finalizer -->|done [remember]| memory",
        "    %% gather sources: documents, graph, memory, web",
    ]


def test_graph_show_prints_the_mode_as_mermaid() -> None:
    agentbus = str(Path(sys.executable).with_name("agentbus"))
    shown = subprocess.run(
        [agentbus, "graph", "show", "--mode", "multi", "--accuracy", "accurate"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert shown == graph.mermaid("multi", "accurate") + "\n"
    assert "critic -->|ok [accurate]| verifier" in shown
    assert "finalizer -->|done [remember]| memory" in shown
    bad = subprocess.run([agentbus, "graph", "show", "--mode", "solo"], capture_output=True)
    assert bad.returncode == 2
