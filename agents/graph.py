"""The agent graph as data: which node follows which, on which outcome, under which condition.

Workers never hard-code their successor: they call :func:`next_role` with the outcome of
their step and the run's settings. ``agentbus graph show`` prints the same edges as Mermaid.

Modes: ``single`` (intake → researcher ⇄ gateway → finalizer), ``multi`` (planner, optional
gather/merge, researcher, critic with bounded reflection, verifier in ``accurate``) and
``custom`` (the multi graph run with the tenant's agent overrides).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from bus.commands import RunSettings
from bus.keys import Role

#: Reflection bound shared by REVISE, REPLAN and a non-pass verdict: first try + one more.
MAX_ATTEMPTS = 2

Condition = Callable[[RunSettings], bool]

CONDITIONS: dict[str, Condition] = {
    "has_sources": lambda s: bool(s.sources),
    "no_sources": lambda s: not s.sources,
    "accurate": lambda s: s.accuracy == "accurate",
    "standard": lambda s: s.accuracy != "accurate",
    "gated": lambda s: s.human_gate,
    "ungated": lambda s: not s.human_gate,
    "standard_gated": lambda s: s.accuracy != "accurate" and s.human_gate,
    "standard_ungated": lambda s: s.accuracy != "accurate" and not s.human_gate,
}


@dataclass(frozen=True, slots=True)
class Edge:
    """From ``source`` on ``outcome`` go to ``target``, if condition ``when`` holds."""

    source: str
    outcome: str
    target: str
    when: str | None = None


#: Graph nodes and the role whose workers run them.
NODE_ROLES: dict[str, Role] = {
    "intake": Role.INTAKE,
    "planner": Role.PLANNER,
    "gather": Role.RETRIEVAL,
    "merge": Role.RETRIEVAL,
    "researcher": Role.RESEARCHER,
    "gateway": Role.GATEWAY,
    "critic": Role.CRITIC,
    "verifier": Role.VERIFIER,
    "finalizer": Role.FINALIZER,
    # Gates have no workers: the run waits in the store until a resume publishes its
    # continuation to the node after the gate.
}

SINGLE: tuple[Edge, ...] = (
    Edge("intake", "admitted", "researcher"),
    Edge("researcher", "tool_calls", "gateway"),
    Edge("gateway", "tool_results", "researcher"),
    Edge("researcher", "answer", "finalizer"),
)

MULTI: tuple[Edge, ...] = (
    Edge("intake", "admitted", "planner"),
    Edge("planner", "planned", "gather", "has_sources"),
    Edge("planner", "planned", "researcher", "no_sources"),
    Edge("gather", "gathered", "merge"),
    Edge("merge", "merged", "researcher"),
    Edge("researcher", "tool_calls", "gateway"),
    Edge("gateway", "tool_results", "researcher"),
    Edge("researcher", "answer", "critic"),
    Edge("critic", "revise", "researcher"),
    Edge("critic", "replan", "planner"),
    Edge("critic", "ok", "verifier", "accurate"),
    Edge("critic", "ok", "answer_gate", "standard_gated"),
    Edge("critic", "ok", "finalizer", "standard_ungated"),
    Edge("verifier", "pass", "answer_gate", "gated"),
    Edge("verifier", "pass", "finalizer", "ungated"),
    Edge("verifier", "revise", "researcher"),
    Edge("researcher", "egress_blocked", "egress_gate"),
    Edge("egress_gate", "allow", "gateway"),
    Edge("egress_gate", "deny", "researcher"),
    Edge("answer_gate", "approve", "finalizer"),
    Edge("answer_gate", "reject", "finalizer"),
)

GRAPHS: dict[str, tuple[Edge, ...]] = {"single": SINGLE, "multi": MULTI, "custom": MULTI}


class NoEdge(LookupError):
    """The graph has no edge for this node and outcome (a bug in a worker or the graph)."""


def edges(mode: str, settings: RunSettings | None = None) -> tuple[Edge, ...]:
    """A mode's edges; with ``settings``, only those whose condition holds."""
    graph = GRAPHS.get(mode, SINGLE)
    if settings is None:
        return graph
    return tuple(e for e in graph if e.when is None or CONDITIONS[e.when](settings))


def next_node(settings: RunSettings, source: str, outcome: str) -> str:
    """The node after ``source`` on ``outcome`` for a run with these settings."""
    for edge in edges(settings.mode, settings):
        if edge.source == source and edge.outcome == outcome:
            return edge.target
    raise NoEdge(f"{settings.mode} graph has no edge from {source} on {outcome}")


def next_role(settings: RunSettings, source: str, outcome: str) -> Role:
    """The role whose stream the next command goes to."""
    return NODE_ROLES[next_node(settings, source, outcome)]


def last_judge(settings: RunSettings) -> str:
    """The judge that runs the fact-check: the verifier in accurate mode, else the critic."""
    if settings.mode == "single":
        return "none"
    return "verifier" if settings.accuracy == "accurate" else "critic"


def mermaid(mode: str, accuracy: str = "standard") -> str:
    """The graph of a mode and accuracy as a Mermaid flowchart (conditions as labels)."""
    # Keep an edge if its condition can hold at this accuracy (gates on or off).
    variants = [
        RunSettings(mode=mode, accuracy=accuracy, human_gate=gate, sources=["documents"])  # type: ignore[arg-type]
        for gate in (False, True)
    ]
    lines = ["flowchart LR"]
    for e in GRAPHS.get(mode, SINGLE):
        bound = e.when is not None and ("accurate" in e.when or "standard" in e.when)
        if bound and not any(CONDITIONS[e.when](v) for v in variants):  # type: ignore[index]
            continue
        if accuracy != "accurate" and "verifier" in (e.source, e.target):
            continue
        label = e.outcome if e.when is None else f"{e.outcome} [{e.when}]"
        lines.append(f"    {e.source} -->|{label}| {e.target}")
    return "\n".join(lines)
