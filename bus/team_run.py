"""A team run's parts of the run state: the team pinned at admission, and where the run is
among the team's declared agents.

The document travels with the run (`RunSettings.team`), so an edit or a delete of the team
never changes a run in flight, and no worker reads the store to learn its next step.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

# A team's name is checked on the request side too, so it is declared with the wire models.
from agentbus_contracts.ids import TEAM_NAME_PATTERN as TEAM_NAME_PATTERN
from bus.frozen import Frozen
from bus.json_values import is_array, is_object


class PinnedTeam(Frozen):
    """The team a run follows: its name, the version current when the run was admitted,
    and that version's document (`agents.teams.document.TeamDocument`, as stored)."""

    name: str = Field(pattern=TEAM_NAME_PATTERN)
    version: int = Field(ge=1)
    document: dict[str, Any]

    def tools_of(self, agent: str) -> frozenset[str]:
        """The tools the declared agent ``agent`` may call (none: no such agent, or none
        listed); the gateway holds its calls to them."""
        return self._listed(agent, "tools")

    def sources_of(self, agent: str) -> frozenset[str]:
        """The sources the declared agent ``agent`` declares (none: no such agent, or none
        declared)."""
        return self._listed(agent, "sources")

    def _listed(self, agent: str, field: str) -> frozenset[str]:
        agents = self.document.get("agents")
        for declared in agents if is_array(agents) else []:
            if is_object(declared) and declared.get("name") == agent:
                names = declared.get(field)
                return frozenset(str(n) for n in names) if is_array(names) else frozenset()
        return frozenset()


class TeamTurn(Frozen):
    """One declared agent's answer: who gave it, and its structured output (None: free text,
    which became the run's draft)."""

    agent: str = Field(pattern=TEAM_NAME_PATTERN)
    output: dict[str, Any] | None = None


class TeamProgress(Frozen):
    """Where a team run is among its declared agents.

    Attributes:
        node: the declared agent the next agent step runs (None: the one after intake).
        turns: the declared agents' answers so far, in order.
        taken: how often each bounded edge was taken, by its index in the document.
    """

    node: str | None = Field(default=None, pattern=TEAM_NAME_PATTERN)
    turns: list[TeamTurn] = []
    taken: dict[str, int] = {}

    def at(self, node: str) -> TeamProgress:
        """This progress with the next agent step running ``node``."""
        return self.model_copy(update={"node": node})

    def answered(self, turn: TeamTurn, edge: int | None) -> TeamProgress:
        """This progress after ``turn``, which left by the bounded edge ``edge`` (if any)."""
        taken = dict(self.taken)
        if edge is not None:
            taken[str(edge)] = taken.get(str(edge), 0) + 1
        return self.model_copy(update={"turns": [*self.turns, turn], "taken": taken})
