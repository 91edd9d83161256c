"""The agent graph: routing by mode, accuracy and gates, and its Mermaid form."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from agents import graph
from bus.commands import RunSettings
from bus.keys import Role


def test_single_mode_routes_researcher_to_gateway_and_finalizer() -> None:
    s = RunSettings(mode="single")
    assert graph.next_role(s, "intake", "admitted") == Role.RESEARCHER
    assert graph.next_role(s, "researcher", "tool_calls") == Role.GATEWAY
    assert graph.next_role(s, "researcher", "answer") == Role.FINALIZER
    with pytest.raises(graph.NoEdge):
        graph.next_node(s, "critic", "ok")


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
    s = RunSettings(mode="multi", accuracy=accuracy, human_gate=gate)  # type: ignore[arg-type]
    assert graph.next_node(s, "critic", "ok") == after_critic
    assert graph.next_node(s, "critic", "replan") == "planner"
    assert graph.last_judge(s) == ("verifier" if accuracy == "accurate" else "critic")


def test_planner_gathers_only_when_sources_exist() -> None:
    assert graph.next_node(RunSettings(mode="multi"), "planner", "planned") == "researcher"
    with_sources = RunSettings(mode="multi", sources=["documents"])
    assert graph.next_node(with_sources, "planner", "planned") == "gather"


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
    assert "verifier" not in graph.mermaid("multi", "standard")
    bad = subprocess.run([agentbus, "graph", "show", "--mode", "solo"], capture_output=True)
    assert bad.returncode == 2
