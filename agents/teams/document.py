"""The team document: agents, the edges between them and the built-in nodes, limits.

A team is data a tenant writes (YAML or JSON). Parsing it only checks shapes; whether it
can run (every path ends at the finalizer, every loop is bounded, only allowed tools and
models) is :mod:`agents.teams.check`'s business, which names each fault at its place.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, cast

from pydantic import BaseModel, ConfigDict, Field

from bus.run_state import MAX_BUDGET_TOKENS, MAX_BUDGET_USD, MAX_TOOL_HOPS, TOOL_NAME_PATTERN

#: A team's and an agent's name: what an OpenAI model name `agentbus-team-NAME` carries.
NAME_PATTERN = r"^[a-z][a-z0-9_-]{0,39}$"
#: The most attempts a loop edge may allow (the built-in reflection bound is 2).
MAX_LOOP_ATTEMPTS = 5
#: The most steps of declared agents one run may take.
MAX_AGENT_STEPS = 64

Scalar = str | int | float | bool
ToolName = Annotated[str, Field(pattern=TOOL_NAME_PATTERN)]


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class TeamAgent(_Frozen):
    """One declared agent: what it is told, which model runs it, what it may use and say.

    ``output_schema`` None: it answers in free text; a JSON schema of an object: it answers
    with such an object, and edges may route on its fields. An agent with ``tools`` calls
    them through the gateway and continues with their results (bounded by the team's
    ``max_tool_hops``); that loop needs no edges.
    """

    name: str = Field(pattern=NAME_PATTERN)
    instructions: str = Field(min_length=1, max_length=8000)
    model: str | None = Field(default=None, min_length=1, max_length=200)
    tools: list[ToolName] = Field(default=[], max_length=64)
    sources: list[str] = Field(default=[], max_length=8)
    output_schema: dict[str, Any] | None = None

    def output_field(self, name: str) -> dict[str, Any] | None:
        """The JSON schema of a field of the structured output (None: no such field)."""
        properties: object = (self.output_schema or {}).get("properties")
        if not isinstance(properties, dict):
            return None
        prop: object = cast("dict[str, object]", properties).get(name)
        return cast("dict[str, Any]", prop) if isinstance(prop, dict) else None

    def output_enum(self, name: str) -> list[Scalar] | None:
        """The values a field of the structured output is limited to, if it is."""
        enum: object = (self.output_field(name) or {}).get("enum")
        return cast("list[Scalar]", enum) if isinstance(enum, list) else None


class FieldMatch(_Frozen):
    """An edge taken only when a field of the agent's structured output equals a value."""

    field: str = Field(min_length=1, max_length=64)
    equals: Scalar


class TeamEdge(_Frozen):
    """From ``from`` on outcome ``on`` go to ``to``.

    ``when`` names a run condition (``agents.graph.CONDITIONS``), ``match`` a field of the
    structured output; ``attempts`` bounds a loop: the edge is taken at most that many
    times in a run, then the next edge leaving the same node on the same outcome is.
    """

    source: str = Field(alias="from", min_length=1, max_length=64)
    on: str = Field(min_length=1, max_length=64)
    to: str = Field(min_length=1, max_length=64)
    when: str | None = Field(default=None, max_length=64)
    match: FieldMatch | None = None
    attempts: int | None = Field(default=None, ge=1, le=MAX_LOOP_ATTEMPTS)


class TeamLimits(_Frozen):
    """What a run of the team may spend: agent steps, tool hops, time and money."""

    max_agent_steps: int = Field(default=16, ge=1, le=MAX_AGENT_STEPS)
    max_tool_hops: int = Field(default=4, ge=0, le=MAX_TOOL_HOPS)
    deadline_s: float | None = Field(default=None, ge=1, le=3600)
    budget_tokens: int | None = Field(default=None, ge=1, le=MAX_BUDGET_TOKENS)
    budget_usd: float | None = Field(default=None, gt=0, le=MAX_BUDGET_USD)


class TeamDocument(_Frozen):
    """A team as its tenant wrote it (before the check)."""

    schema_version: Literal[1] = 1
    name: str | None = Field(default=None, pattern=NAME_PATTERN)
    description: str = Field(default="", max_length=2000)
    agents: list[TeamAgent] = Field(default=[], max_length=32)
    edges: list[TeamEdge] = Field(min_length=1, max_length=256)
    limits: TeamLimits = TeamLimits()

    def agent(self, name: str) -> TeamAgent | None:
        """The declared agent of that name, if any."""
        return next((a for a in self.agents if a.name == name), None)


__all__ = [
    "NAME_PATTERN",
    "FieldMatch",
    "TeamAgent",
    "TeamDocument",
    "TeamEdge",
    "TeamLimits",
]
