"""Where a declared agent's answer goes: the first of its edges, in the document's order,
whose condition holds, whose field matches the answer's structured output, and whose
bound (``attempts``) the run has not used up."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agents import graph
from agents.teams.document import TeamDocument, TeamEdge
from agents.teams.nodes import AGENT_OUTCOME
from bus.run_state import RunSettings


@dataclass(frozen=True, slots=True)
class Hop:
    """The edge an answer leaves by: its index in the document, and where it goes."""

    index: int
    to: str
    bounded: bool


class NoRoute(LookupError):
    """No edge of the agent takes this answer (a document the check would refuse)."""


def _matches(edge: TeamEdge, output: Mapping[str, Any] | None) -> bool:
    if edge.match is None:
        return True
    if output is None or edge.match.field not in output:
        return False
    value, equals = output[edge.match.field], edge.match.equals
    if isinstance(value, bool) or isinstance(equals, bool):  # a JSON true is not the number 1
        return value is equals
    return value == equals


def route(
    doc: TeamDocument,
    settings: RunSettings,
    agent: str,
    output: Mapping[str, Any] | None,
    taken: Mapping[str, int],
) -> Hop:
    """The hop ``agent``'s answer takes (``output``: its structured output, None for free
    text or an output its schema refused; ``taken``: bounded edges taken so far).

    Raises:
        NoRoute: no edge takes it.
    """
    for i, edge in enumerate(doc.edges):
        if edge.source != agent or edge.on != AGENT_OUTCOME:
            continue
        if edge.when is not None and not graph.CONDITIONS[edge.when](settings):
            continue
        if not _matches(edge, output):
            continue
        if edge.attempts is not None and taken.get(str(i), 0) >= edge.attempts:
            continue
        return Hop(index=i, to=edge.to, bounded=edge.attempts is not None)
    raise NoRoute(f"no edge of {agent} takes its answer")
