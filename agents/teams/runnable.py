"""Which teams a run can follow now: declared agents entered from ``intake``, from each
other or from the judges, their tool loops through the gateway (without edges), the
critic and the verifier (reviewing the answer so far, sending it back to a declared
agent), the answer gate after a judge's approval, gather and merge before the first
agent, the finalizer and memory after it.

A gather and merge of the run's sources may come before the first declared agent. A team
that uses another built-in node (the researcher, the planner, the egress and client-tool
gates), a judge's fact-check or gather and merge elsewhere is stored as checked, but a
run of it is refused at admission: the steps that would hand such a run back to a
declared agent do not exist.
"""

from __future__ import annotations

from collections.abc import Iterator

from agents.teams.document import TeamDocument
from agents.teams.faults import TeamFault, pointer

#: The built-in nodes a team run may pass through.
RUNNABLE_BUILTINS = frozenset(
    {
        "intake",
        "gather",
        "merge",
        "critic",
        "verifier",
        "answer_gate",
        "finalizer",
        "memory",
    }
)
#: The answer gate: entered when a judge approves (the judge suspends the run there), left
#: on a person's decision to the finalizer (a rejected answer ends the run ``rejected``).
GATE = "answer_gate"
GATE_ENTRIES = frozenset({("critic", "ok"), ("verifier", "pass")})
GATE_DECISIONS = ("approve", "reject")
#: The judges' outcomes a team run may route, and the one each judge always needs: what it
#: leaves on when it sends nothing back (its send-back is taken only where the team has
#: an edge for it, within the run's reflection bound).
JUDGE_OUTCOMES = {
    "critic": (frozenset({"ok", "revise", "replan"}), "ok"),
    "verifier": (frozenset({"pass", "revise"}), "pass"),
}


def not_runnable(doc: TeamDocument) -> list[TeamFault]:
    """Every place the team asks for something a team run cannot do yet."""
    return [*_nodes(doc), *_judges(doc), *_gate(doc), *_gather(doc)]


def _nodes(doc: TeamDocument) -> Iterator[TeamFault]:
    for i, edge in enumerate(doc.edges):
        for field, node in (("from", edge.source), ("to", edge.to)):
            if node == "gateway":
                yield TeamFault(
                    pointer=pointer("edges", i, field),
                    code="node_not_runnable",
                    message="a declared agent's tools go through the gateway without edges: "
                    "list them in its `tools`",
                )
            elif doc.agent(node) is None and node not in RUNNABLE_BUILTINS:
                yield TeamFault(
                    pointer=pointer("edges", i, field),
                    code="node_not_runnable",
                    message=f"a team run cannot pass through {node} yet; use declared "
                    f"agents and {', '.join(sorted(RUNNABLE_BUILTINS))}",
                )


def _judges(doc: TeamDocument) -> Iterator[TeamFault]:
    used: set[str] = set()
    for i, edge in enumerate(doc.edges):
        used.add(edge.to)
        if edge.source not in JUDGE_OUTCOMES:
            continue
        outcomes, _ = JUDGE_OUTCOMES[edge.source]
        if edge.on not in outcomes:
            yield TeamFault(
                pointer=pointer("edges", i, "on"),
                code="outcome_not_runnable",
                message=f"in a team run {edge.source} leaves on {', '.join(sorted(outcomes))}; "
                f"its fact-check ({edge.on}) is not run in a team yet",
            )
    for judge in sorted(used & set(JUDGE_OUTCOMES)):
        _, always = JUDGE_OUTCOMES[judge]
        if not any(e.source == judge and e.on == always and e.when is None for e in doc.edges):
            first = next(i for i, e in enumerate(doc.edges) if e.to == judge)
            yield TeamFault(
                pointer=pointer("edges", first, "to"),
                code="judge_without_exit",
                message=f"{judge} needs an edge on {always} with no `when`: the way every "
                "run leaves it when it sends nothing back",
            )


def _gate(doc: TeamDocument) -> Iterator[TeamFault]:
    entered = False
    for i, edge in enumerate(doc.edges):
        if edge.to == GATE:
            entered = True
            if (edge.source, edge.on) not in GATE_ENTRIES:
                yield TeamFault(
                    pointer=pointer("edges", i),
                    code="gate_not_runnable",
                    message=f"in a team run {GATE} follows a judge's approval (critic on ok, "
                    "verifier on pass), which suspends the run there",
                )
        if edge.source == GATE and edge.to != "finalizer":
            yield TeamFault(
                pointer=pointer("edges", i, "to"),
                code="gate_not_runnable",
                message=f"in a team run {GATE} leads to the finalizer only",
            )
    if not entered:
        return
    for decision in GATE_DECISIONS:
        if not any(e.source == GATE and e.on == decision and e.when is None for e in doc.edges):
            yield TeamFault(
                pointer=pointer("edges"),
                code="gate_not_runnable",
                message=f"{GATE} needs an edge on {decision} (with no `when`) to the finalizer",
            )


def _gather(doc: TeamDocument) -> Iterator[TeamFault]:
    """The run's sources gathered before the first agent: ``intake`` on ``admitted`` to
    ``gather`` when the run has sources (with a later way on when it has none), ``merge``
    on ``merged`` to a declared agent, which reads the merged passages before the
    question (a gather later in a run has no step to start it)."""
    for i, edge in enumerate(doc.edges):
        if edge.to == "gather" and (edge.source, edge.on, edge.when) != (
            "intake",
            "admitted",
            "has_sources",
        ):
            yield _gather_fault(i, "gather is entered from intake on admitted, when has_sources")
        if edge.to == "merge" and (edge.source, edge.on) != ("gather", "gathered"):
            yield _gather_fault(i, "merge is entered from gather on gathered")
        if edge.source == "gather" and (edge.on, edge.to) != ("gathered", "merge"):
            yield _gather_fault(i, "gather leads to merge (on gathered) only")
        if edge.source == "merge" and (edge.on != "merged" or doc.agent(edge.to) is None):
            yield _gather_fault(i, "merge leads to a declared agent (on merged) only")
    gathers = [i for i, e in enumerate(doc.edges) if e.source == "intake" and e.to == "gather"]
    if gathers and not any(
        e.source == "intake" and e.when is None for e in doc.edges[gathers[0] + 1 :]
    ):
        yield _gather_fault(
            gathers[0], "a run without sources needs a later edge from intake with no `when`"
        )


def _gather_fault(i: int, message: str) -> TeamFault:
    return TeamFault(
        pointer=pointer("edges", i), code="gather_not_runnable", message=f"in a team run {message}"
    )


def gathered_for(doc: TeamDocument) -> list[str]:
    """The sources the first declared agent reads (the one ``merge`` leads to): what a run
    of the team that names no sources of its own gathers ([]: none declared, or the team
    gathers nothing)."""
    first = next((e.to for e in doc.edges if e.source == "merge"), None)
    agent = None if first is None else doc.agent(first)
    return list(agent.sources) if agent is not None else []
