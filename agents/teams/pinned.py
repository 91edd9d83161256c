"""A run's pinned team as the `agent` role reads it: its document, parsed once per version,
and what one declared agent is handed when its turn comes."""

from __future__ import annotations

import json
from collections.abc import Sequence

from agents.teams.document import TeamDocument
from bus.team_run import PinnedTeam, TeamTurn

_PARSED: dict[str, TeamDocument] = {}


def document_of(team: PinnedTeam) -> TeamDocument:
    """The pinned team's document (parsed once per process: a version never changes)."""
    key = json.dumps(team.document, sort_keys=True)
    found = _PARSED.get(key)
    if found is None:
        if len(_PARSED) > 256:
            _PARSED.clear()
        found = _PARSED[key] = TeamDocument.model_validate(team.document)
    return found


def handoff(draft: str | None, turns: Sequence[TeamTurn]) -> str | None:
    """What the next declared agent reads after the question: the answer so far (the last
    free-text agent's), and the structured outputs given since (None: nothing yet)."""
    parts: list[str] = []
    if draft:
        parts.append(f"The answer so far:\n{draft}")
    since = max((i for i, t in enumerate(turns) if t.output is None), default=-1)
    for turn in turns[since + 1 :]:
        if turn.output is not None:
            said = json.dumps(turn.output, ensure_ascii=False)
            parts.append(f"{turn.agent} said: {said}")
    return "\n\n".join(parts) or None
