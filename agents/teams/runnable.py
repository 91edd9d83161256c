"""Which teams the ``agent`` role can run now: declared agents entered from ``intake`` or
from each other, their tool loops through the gateway, the finalizer and memory after it.

A team that uses another built-in node (gather and merge, the researcher, the judges, the
gates) is stored as checked, but a run of it is refused at admission: the role that would
hand the run back to a declared agent from such a node does not exist yet.
"""

from __future__ import annotations

from agents.teams.document import TeamDocument
from agents.teams.faults import TeamFault, pointer

#: The built-in nodes a team run may pass through.
RUNNABLE_BUILTINS = frozenset({"intake", "gateway", "finalizer", "memory"})


def not_runnable(doc: TeamDocument) -> list[TeamFault]:
    """Every place the team names a built-in node a team run cannot pass through yet."""
    faults: list[TeamFault] = []
    for i, edge in enumerate(doc.edges):
        for field, node in (("from", edge.source), ("to", edge.to)):
            if doc.agent(node) is None and node not in RUNNABLE_BUILTINS:
                faults.append(
                    TeamFault(
                        pointer=pointer("edges", i, field),
                        code="node_not_runnable",
                        message=f"a team run cannot pass through {node} yet; use declared "
                        f"agents and {', '.join(sorted(RUNNABLE_BUILTINS))}",
                    )
                )
    return faults
