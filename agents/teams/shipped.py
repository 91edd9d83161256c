"""The built-in modes as team documents: ``single`` and ``multi``, shipped as YAML.

The built-in roles run them; these documents are their declaration, and the same check a
tenant's team passes accepts them. :func:`graph_edges` turns a document's edges into the
graph's, which a test compares with ``agents.graph.SINGLE`` and ``MULTI``.
"""

from __future__ import annotations

from functools import cache
from importlib import resources

from agents import graph
from agents.teams.document import TeamDocument
from agents.teams.parse import parse_team

#: The shipped documents, by name.
SHIPPED = ("single", "multi")


@cache
def shipped(name: str) -> TeamDocument:
    """The shipped document of a built-in mode.

    Raises:
        KeyError: no mode of that name is shipped.
    """
    if name not in SHIPPED:
        raise KeyError(name)
    text = resources.files("agents").joinpath("data", "teams", f"{name}.yaml").read_text()
    return parse_team(text)


def graph_edges(doc: TeamDocument) -> tuple[graph.Edge, ...]:
    """The document's edges as the graph's (an edge matching a field has no graph twin).

    Raises:
        ValueError: an edge matches a field or bounds its attempts (only declared agents'
            edges do; the built-in graph's workers bound their own loops).
    """
    out: list[graph.Edge] = []
    for e in doc.edges:
        if e.match is not None or e.attempts is not None:
            raise ValueError(f"edge {e.source} -> {e.to} has no built-in graph twin")
        out.append(graph.Edge(e.source, e.on, e.to, e.when))
    return tuple(out)
