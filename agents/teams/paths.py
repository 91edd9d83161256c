"""The paths of a team: every agent reachable, every path ending at the finalizer, every
agent's output routed whatever it says, every loop bounded and able to leave.

Conditions (``when``) are read as "may hold": a node is reachable if some run can reach
it. Edges whose ends are unknown are left out here (``check`` names them).
"""

from __future__ import annotations

from collections.abc import Iterator

from agents import graph
from agents.teams.document import TeamAgent, TeamDocument, TeamEdge
from agents.teams.faults import TeamFault, pointer
from agents.teams.nodes import AFTER_FINALIZER, BUILTIN_BOUNDED, BUILTIN_OUTCOMES, FINALIZER

Indexed = list[tuple[int, TeamEdge]]


def path_faults(doc: TeamDocument) -> Iterator[TeamFault]:
    """The faults of the document's paths (see the module docstring)."""
    names = set(BUILTIN_OUTCOMES) | {a.name for a in doc.agents}
    known: Indexed = [(i, e) for i, e in enumerate(doc.edges) if {e.source, e.to} <= names]
    reached = _reach(known, graph.START, forward=True)
    if graph.START not in {e.source for _, e in known}:
        yield TeamFault(
            pointer=pointer("edges"),
            code="no_start",
            message=f"no edge leaves {graph.START}, where every run starts",
        )
        return
    for i, agent in enumerate(doc.agents):
        if agent.name not in reached:
            yield TeamFault(
                pointer=pointer("agents", i),
                code="unreachable",
                message=f"no path from {graph.START} reaches {agent.name}",
            )
    yield from _ends(doc, known, reached)
    yield from _covered(doc, known)
    yield from _loops(known)


def _reach(edges: Indexed, start: str, *, forward: bool) -> set[str]:
    seen = {start}
    grew = True
    while grew:
        grew = False
        for _, e in edges:
            a, b = (e.source, e.to) if forward else (e.to, e.source)
            if a in seen and b not in seen:
                seen.add(b)
                grew = True
    return seen


def _where(doc: TeamDocument, edges: Indexed, node: str) -> str:
    """Where a node is named: its declaration, or the first edge into it."""
    for i, agent in enumerate(doc.agents):
        if agent.name == node:
            return pointer("agents", i)
    first = next((i for i, e in edges if e.to == node), None)
    return pointer("edges", first, "to") if first is not None else pointer("edges")


def _ends(doc: TeamDocument, edges: Indexed, reached: set[str]) -> Iterator[TeamFault]:
    to_finalizer = _reach(edges, FINALIZER, forward=False)
    ending = reached - {FINALIZER} - AFTER_FINALIZER
    dead = {n for n in ending if not any(e.source == n for _, e in edges)}
    # A node whose only way out leads to a dead end is named once, at the dead end.
    to_dead: set[str] = set()
    for n in dead:
        to_dead |= _reach(edges, n, forward=False)
    for node in sorted(ending):
        if node in dead:
            yield TeamFault(
                pointer=_where(doc, edges, node),
                code="dead_end",
                message=f"no edge leaves {node}: a run there would never end at {FINALIZER}",
            )
        elif node not in to_finalizer and node not in to_dead:
            yield TeamFault(
                pointer=_where(doc, edges, node),
                code="no_path_to_finalizer",
                message=f"no path from {node} ends at {FINALIZER}",
            )
    for node in sorted(reached & AFTER_FINALIZER):
        if any(e.source == node for _, e in edges):
            first = next(i for i, e in edges if e.source == node)
            yield TeamFault(
                pointer=pointer("edges", first, "from"),
                code="after_the_end",
                message=f"{node} runs after the finalizer; nothing may follow it",
            )


def _fallback(e: TeamEdge) -> bool:
    return e.match is None and e.when is None and e.attempts is None


def _covered(doc: TeamDocument, edges: Indexed) -> Iterator[TeamFault]:
    """A declared agent's every output leads somewhere, and no edge hides behind a
    fallback."""
    for a, agent in enumerate(doc.agents):
        leaving = [(i, e) for i, e in edges if e.source == agent.name]
        if not leaving:
            continue  # a dead end, named by _ends when reachable
        fallback = next((i for i, e in leaving if _fallback(e)), None)
        if fallback is not None:
            for i, _ in leaving:
                if i > fallback:
                    yield TeamFault(
                        pointer=pointer("edges", i),
                        code="shadowed_edge",
                        message=f"edge {fallback} from {agent.name} is always taken first",
                    )
            continue
        if not _enum_covered(agent, [e for _, e in leaving]):
            yield TeamFault(
                pointer=pointer("agents", a),
                code="output_not_covered",
                message=f"some output of {agent.name} matches no edge: add an edge from it "
                "with no match, when or attempts, or match every value of an enum field",
            )


def _enum_covered(agent: TeamAgent, leaving: list[TeamEdge]) -> bool:
    plain = [e.match for e in leaving if e.when is None and e.attempts is None and e.match]
    for field in {m.field for m in plain}:
        enum = agent.output_enum(field)
        if enum is not None and set(enum) <= {m.equals for m in plain if m.field == field}:
            return True
    return False


def _built_in_bound(e: TeamEdge) -> bool:
    return (e.source, e.on) in BUILTIN_BOUNDED


def _loops(edges: Indexed) -> Iterator[TeamFault]:
    """Loops bounded (by an edge's ``attempts`` or a built-in worker), and able to leave."""
    free = [(i, e) for i, e in edges if e.attempts is None and not _built_in_bound(e)]
    for component in _cycles(free):
        first = min(i for i, e in free if e.source in component and e.to in component)
        yield TeamFault(
            pointer=pointer("edges", first),
            code="unbounded_loop",
            message=f"the loop through {', '.join(sorted(component))} has no bound: give "
            "one of its edges `attempts`",
        )
    for i, e in edges:
        if e.attempts is None:
            continue
        exits = [x for j, x in edges if j > i and x.source == e.source and x.on == e.on]
        if not any(_fallback(x) for x in exits):
            yield TeamFault(
                pointer=pointer("edges", i, "attempts"),
                code="loop_without_exit",
                message=f"after {e.attempts} attempt(s) {e.source} needs a later edge on "
                f"{e.on} with no match, when or attempts to leave by",
            )


def _cycles(edges: Indexed) -> list[set[str]]:
    """The strongly connected parts of the graph that hold a cycle (Tarjan)."""
    succ: dict[str, list[str]] = {}
    for _, e in edges:
        succ.setdefault(e.source, []).append(e.to)
        succ.setdefault(e.to, [])
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[set[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in succ[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            part: set[str] = set()
            while True:
                w = stack.pop()
                part.add(w)
                if w == v:
                    break
            if len(part) > 1 or v in succ[v]:
                found.append(part)

    for v in sorted(succ):
        if v not in index:
            visit(v)
    return found
