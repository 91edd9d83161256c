"""The agent graph as data: which role follows which, under which condition.

Workers never hard-code their successor; they ask :func:`next_role` with the outcome
of their step. ``agentbus graph show`` prints the same table as Mermaid.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from bus.keys import Role

Mode = Literal["single", "multi", "custom"]
Outcome = Literal["admitted", "tool_calls", "answer", "tool_results"]


@dataclass(frozen=True, slots=True)
class Edge:
    """From ``source``, on ``outcome``, go to ``target``."""

    source: Role
    outcome: Outcome
    target: Role


SINGLE: tuple[Edge, ...] = (
    Edge(Role.INTAKE, "admitted", Role.RESEARCHER),
    Edge(Role.RESEARCHER, "tool_calls", Role.GATEWAY),
    Edge(Role.GATEWAY, "tool_results", Role.RESEARCHER),
    Edge(Role.RESEARCHER, "answer", Role.FINALIZER),
)

GRAPHS: dict[str, tuple[Edge, ...]] = {"single": SINGLE}


class NoEdge(LookupError):
    """The graph has no edge for this role and outcome (a bug in the graph or a worker)."""


def edges(mode: str) -> tuple[Edge, ...]:
    """The edges of a mode's graph (modes without their own graph run ``single``)."""
    return GRAPHS.get(mode, SINGLE)


def next_role(mode: str, source: Role, outcome: Outcome) -> Role:
    """Where ``source``'s output goes after ``outcome`` in ``mode``."""
    for edge in edges(mode):
        if edge.source == source and edge.outcome == outcome:
            return edge.target
    raise NoEdge(f"{mode} graph has no edge from {source} on {outcome}")


def mermaid(mode: str) -> str:
    """The graph as a Mermaid flowchart."""
    lines = ["flowchart LR"]
    lines += [f"    {e.source} -->|{e.outcome}| {e.target}" for e in edges(mode)]
    return "\n".join(lines)
