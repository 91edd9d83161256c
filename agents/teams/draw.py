"""A team as a Mermaid flowchart: declared agents as rounded nodes, each edge labelled with
its outcome, the field it matches, its condition and its bound."""

from __future__ import annotations

from agents.teams.document import TeamDocument, TeamEdge


def _label(e: TeamEdge) -> str:
    label = e.on
    if e.match is not None:
        label += f" {e.match.field}={e.match.equals}"
    if e.when is not None:
        label += f" [{e.when}]"
    if e.attempts is not None:
        label += f" ≤{e.attempts}"
    return label.replace("|", "/").replace('"', "'")


def mermaid(doc: TeamDocument) -> str:
    """The team's graph as a Mermaid flowchart (``flowchart LR``)."""
    lines = ["flowchart LR"]
    for agent in doc.agents:
        lines.append(f"    {agent.name}([{agent.name}])")
    for e in doc.edges:
        lines.append(f"    {e.source} -->|{_label(e)}| {e.to}")
    return "\n".join(lines)
