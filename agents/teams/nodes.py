"""The built-in nodes a team may use, the outcomes they leave on, and the loops they bound.

Read off the built-in graphs (``agents.graph``), so a node's outcomes are the ones its
workers produce. A declared agent leaves on ``answer`` only: its tool calls go to the
gateway and back to it without edges.
"""

from __future__ import annotations

from agents import graph

#: A declared agent's one outcome: its output (free text, or the object its schema asks for).
AGENT_OUTCOME = "answer"
#: Where every path must end, and what may follow it (off the run's path).
FINALIZER = "finalizer"
AFTER_FINALIZER = frozenset({"memory"})
#: Nodes that suspend a run in the state store until a person decides.
GATES = frozenset({"answer_gate", "egress_gate", "client_tool_gate"})


def _outcomes() -> dict[str, frozenset[str]]:
    by: dict[str, set[str]] = {}
    for edges in (graph.SINGLE, graph.MULTI):
        for e in edges:
            by.setdefault(e.source, set()).add(e.outcome)
            by.setdefault(e.target, set())
    return {node: frozenset(outs) for node, outs in by.items()}


#: Every built-in node (gates included) and the outcomes it leaves on.
BUILTIN_OUTCOMES: dict[str, frozenset[str]] = _outcomes()

#: Edges the built-in workers bound themselves: the researcher's tool hops
#: (``max_tool_hops``), a person at a gate, and the judges' reflection and fact-check
#: (``agents.graph.MAX_ATTEMPTS``). A loop through one of them is bounded.
BUILTIN_BOUNDED: frozenset[tuple[str, str]] = frozenset(
    {
        ("researcher", "tool_calls"),
        ("researcher", "egress_blocked"),
        ("researcher", "client_tool"),
        ("critic", "revise"),
        ("critic", "replan"),
        ("critic", "recheck"),
        ("critic", "fact_check"),
        ("verifier", "revise"),
        ("verifier", "recheck"),
        ("verifier", "fact_check"),
    }
)
