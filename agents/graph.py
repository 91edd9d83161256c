"""The agent graph as data: which node follows which, on which outcome, under which condition.

Every route of a run is an edge here, the fact-check's and the gather fan-out's included:
workers never name their successor, they ask :func:`next_role` (or :func:`has_edge`) with
the outcome of their step and the run's settings. The gateway gets :func:`next_role` from
the composition root, so its results go back along these edges too. ``agentbus graph show``
and ``GET /api/v1/graph`` draw the same edges as Mermaid.

A run that follows a tenant's team (``RunSettings.team``, mode ``custom``) is routed by the
team's own edges: its declared agents run in the ``agent`` role, which routes their
answers itself (on fields of their output, within loop bounds: `agents.teams.route`);
the built-in nodes of the team ask here as in the built-in modes.

Modes: ``single`` (intake → [gather/merge: the context] → researcher ⇄ gateway → finalizer
[→ memory]),
``multi`` (planner, optional gather/merge, researcher, critic with bounded reflection,
verifier in ``accurate``, the last judge's fact-check) and ``custom`` (the multi graph run
with the tenant's agent overrides).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from bus.commands import RunSettings
from bus.keys import Role
from bus.team_run import PinnedTeam

#: Reflection bound shared by REVISE, REPLAN and a non-pass verdict: first try + one more.
MAX_ATTEMPTS = 2

Condition = Callable[[RunSettings], bool]

_BASIC: dict[str, Condition] = {
    "has_sources": lambda s: bool(s.sources),
    "no_sources": lambda s: not s.sources,
    "accurate": lambda s: s.accuracy == "accurate",
    "standard": lambda s: s.accuracy != "accurate",
    "gated": lambda s: s.human_gate,
    "ungated": lambda s: not s.human_gate,
    "fact_check": lambda s: s.verifier_check,
    "tools": lambda s: s.use_tools,
    "remember": lambda s: s.memory,
}


def _all_of(*names: str) -> Condition:
    checks = [_BASIC[n] for n in names]
    return lambda s: all(check(s) for check in checks)


#: Conditions by name: the basic ones, and the conjunctions edges need.
CONDITIONS: dict[str, Condition] = {
    **_BASIC,
    "standard_gated": _all_of("standard", "gated"),
    "standard_ungated": _all_of("standard", "ungated"),
    # The fact-check runs in the last judge: the critic in standard, the verifier in accurate.
    "standard_recheck": _all_of("standard", "fact_check", "has_sources"),
    "standard_tool_check": _all_of("standard", "fact_check", "tools"),
    "accurate_recheck": _all_of("accurate", "fact_check", "has_sources"),
    "accurate_tool_check": _all_of("accurate", "fact_check", "tools"),
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
    "memory": Role.MEMORY,
    # Gates have no workers: the run waits in the store until a resume publishes its
    # continuation to the node after the gate.
}

#: Where every run starts.
START = "intake"

SINGLE: tuple[Edge, ...] = (
    # Context before the first model call: the run's sources (the tenant's documents, when
    # it has any and has not turned `single_context` off) are gathered and numbered first.
    Edge("intake", "admitted", "gather", "has_sources"),
    Edge("intake", "admitted", "researcher", "no_sources"),
    Edge("gather", "gathered", "merge"),
    Edge("merge", "merged", "researcher"),
    Edge("researcher", "tool_calls", "gateway"),
    Edge("gateway", "research", "researcher"),
    Edge("researcher", "client_tool", "client_tool_gate"),
    Edge("client_tool_gate", "result", "gateway"),
    Edge("researcher", "answer", "finalizer"),
    # After the run is done, off its path: what the question said about the user.
    Edge("finalizer", "done", "memory", "remember"),
)

MULTI: tuple[Edge, ...] = (
    Edge("intake", "admitted", "planner"),
    Edge("planner", "planned", "gather", "has_sources"),
    Edge("planner", "planned", "researcher", "no_sources"),
    Edge("gather", "gathered", "merge"),
    Edge("merge", "merged", "researcher"),
    Edge("researcher", "tool_calls", "gateway"),
    Edge("gateway", "research", "researcher"),
    Edge("researcher", "egress_blocked", "egress_gate"),
    Edge("egress_gate", "allow", "gateway"),
    Edge("egress_gate", "deny", "researcher"),
    # A client-declared tool the model called: the client runs it; its result goes through
    # the gateway's chain like any tool's.
    Edge("researcher", "client_tool", "client_tool_gate"),
    Edge("client_tool_gate", "result", "gateway"),
    Edge("researcher", "answer", "critic"),
    # The critic's fact-check (standard): re-query the sources, then a verify-only tool pass.
    Edge("critic", "recheck", "gather", "standard_recheck"),
    Edge("merge", "rechecked", "critic", "standard"),
    Edge("critic", "fact_check", "gateway", "standard_tool_check"),
    Edge("gateway", "fact_check", "critic", "standard"),
    Edge("critic", "revise", "researcher"),
    Edge("critic", "replan", "planner"),
    Edge("critic", "ok", "verifier", "accurate"),
    Edge("critic", "ok", "answer_gate", "standard_gated"),
    Edge("critic", "ok", "finalizer", "standard_ungated"),
    # The verifier's fact-check (accurate).
    Edge("verifier", "recheck", "gather", "accurate_recheck"),
    Edge("merge", "rechecked", "verifier", "accurate"),
    Edge("verifier", "fact_check", "gateway", "accurate_tool_check"),
    Edge("gateway", "fact_check", "verifier", "accurate"),
    Edge("verifier", "pass", "answer_gate", "gated"),
    Edge("verifier", "pass", "finalizer", "ungated"),
    Edge("verifier", "revise", "researcher"),
    Edge("answer_gate", "approve", "finalizer"),
    Edge("answer_gate", "reject", "finalizer"),
    Edge("finalizer", "done", "memory", "remember"),
)

GRAPHS: dict[str, tuple[Edge, ...]] = {"single": SINGLE, "multi": MULTI, "custom": MULTI}

#: The retrieval sources a gather step fans out to (a run gathers from those it has: the
#: planner chooses among them; single mode's context is the documents). The names are
#: `retrieval.gather_source.DOCUMENTS`, `retrieval.graph.source.GRAPH`,
#: `agents.sources.MEMORY` and `agents.sources.WEB`.
SOURCES: dict[str, str] = {
    "documents": "hybrid search over the tenant's ingested documents",
    "graph": "facts extracted from those documents at ingest, walked one or two hops from "
    "the entities the question names; each passage is a source chunk",
    "memory": "the conversation's earlier turns",
    "web": "the gateway's web_search, under the tenant's tools and egress policy",
}


class NoEdge(LookupError):
    """The graph has no edge for this node and outcome (a bug in a worker or the graph)."""


def edges(mode: str, settings: RunSettings | None = None) -> tuple[Edge, ...]:
    """A mode's edges; with ``settings``, only those whose condition holds."""
    graph = GRAPHS.get(mode, SINGLE)
    if settings is None:
        return graph
    return tuple(e for e in graph if e.when is None or CONDITIONS[e.when](settings))


def _index(graph: tuple[Edge, ...]) -> dict[tuple[str, str], tuple[Edge, ...]]:
    by: dict[tuple[str, str], list[Edge]] = {}
    for e in graph:
        by.setdefault((e.source, e.outcome), []).append(e)
    return {k: tuple(v) for k, v in by.items()}


# Each step asks for its way out: only the edges leaving its node on its outcome are
# tested (in graph order), not every edge's condition (measured: ~6% of a multi run's CPU).
_LEAVING = {mode: _index(graph) for mode, graph in GRAPHS.items()}


#: The node a declared agent's tool results go back to: the `agent` role, which finds the
#: agent in the run's progress.
TEAM_AGENT = "agent"


@dataclass(frozen=True, slots=True)
class TeamGraph:
    """A team document's routes, as the built-in nodes read them."""

    agents: frozenset[str]
    leaving: dict[tuple[str, str], tuple[Edge, ...]]


_TEAMS: dict[str, TeamGraph] = {}


def _team_graph(team: PinnedTeam) -> TeamGraph:
    """The routes of a pinned team (cached by its document: a version never changes)."""
    key = json.dumps(team.document, sort_keys=True)
    found = _TEAMS.get(key)
    if found is None:
        doc: dict[str, Any] = team.document
        agents = frozenset(str(a["name"]) for a in doc.get("agents", []))
        # A declared agent's edges are the agent role's to read (`agents.teams.route`).
        plain = [
            Edge(str(e["from"]), str(e["on"]), str(e["to"]), e.get("when"))
            for e in doc.get("edges", [])
            if e["from"] not in agents
        ]
        # A declared agent's tool loop: to the gateway and back, without edges.
        plain += [Edge(TEAM_AGENT, "tool_calls", "gateway"), Edge("gateway", "agent", TEAM_AGENT)]
        if len(_TEAMS) > 256:
            _TEAMS.clear()
        found = _TEAMS[key] = TeamGraph(agents, _index(tuple(plain)))
    return found


def declared_agents(settings: RunSettings) -> frozenset[str]:
    """The declared agents of the run's team (none outside a team run)."""
    return frozenset() if settings.team is None else _team_graph(settings.team).agents


def role_of(settings: RunSettings, node: str) -> Role:
    """The role whose workers run ``node`` in this run (a declared agent: ``agent``)."""
    if node == TEAM_AGENT or node in declared_agents(settings):
        return Role.AGENT
    return NODE_ROLES[node]


def _first(settings: RunSettings, source: str, outcome: str) -> Edge | None:
    if settings.team is not None:
        leaving = _team_graph(settings.team).leaving.get((source, outcome), ())
    else:
        leaving = _LEAVING.get(settings.mode, _LEAVING["single"]).get((source, outcome), ())
    for e in leaving:
        if e.when is None or CONDITIONS[e.when](settings):
            return e
    return None


def has_edge(settings: RunSettings, source: str, outcome: str) -> bool:
    """True if a run with these settings can leave ``source`` on ``outcome``."""
    return _first(settings, source, outcome) is not None


def next_node(settings: RunSettings, source: str, outcome: str) -> str:
    """The node after ``source`` on ``outcome`` for a run with these settings."""
    edge = _first(settings, source, outcome)
    if edge is None:
        raise NoEdge(f"{settings.mode} graph has no edge from {source} on {outcome}")
    return edge.target


def next_role(settings: RunSettings, source: str, outcome: str) -> Role:
    """The role whose stream the next command goes to."""
    return role_of(settings, next_node(settings, source, outcome))


def reachable(active: Iterable[Edge], start: str = START) -> list[Edge]:
    """The edges a run can take from ``start``, in their order."""
    active = list(active)
    seen = {start}
    grew = True
    while grew:
        grew = False
        for e in active:
            if e.source in seen and e.target not in seen:
                seen.add(e.target)
                grew = True
    return [e for e in active if e.source in seen]


def _variants(mode: str, accuracy: str) -> list[RunSettings]:
    # Every combination of the settings the conditions read, at this mode and accuracy.
    return [
        RunSettings.model_validate(
            {
                "mode": mode,
                "accuracy": accuracy,
                "human_gate": gated,
                "sources": sources,
                "verifier_check": checked,
                "use_tools": tools,
                "memory": memory,
            }
        )
        for gated, sources, checked, tools, memory in itertools.product(
            (False, True), ([], ["documents"]), (False, True), (False, True), (False, True)
        )
    ]


def drawn(mode: str, accuracy: str = "standard") -> list[Edge]:
    """The edges some run of this mode and accuracy can take (gates, sources, fact-check
    and tools on or off), in the graph's order: what a drawing of it shows."""
    taken: set[Edge] = set()
    for settings in _variants(mode, accuracy):
        taken.update(reachable(edges(mode, settings)))
    return [e for e in GRAPHS.get(mode, SINGLE) if e in taken]


def mermaid(mode: str, accuracy: str = "standard") -> str:
    """The graph of a mode and accuracy as a Mermaid flowchart (conditions as labels; the
    sources a gather fans out to as a closing comment)."""
    lines = ["flowchart LR"]
    shown = drawn(mode, accuracy)
    for e in shown:
        label = e.outcome if e.when is None else f"{e.outcome} [{e.when}]"
        lines.append(f"    {e.source} -->|{label}| {e.target}")
    if any(e.target == "gather" for e in shown):
        lines.append(f"    %% gather sources: {', '.join(SOURCES)}")
    return "\n".join(lines)
