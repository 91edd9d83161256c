"""A run that names a team: the team's version current now, pinned on the run, and the
run's settings bounded by the team's limits.

The run carries the document itself (`bus.team_run.PinnedTeam`), so an edit or a delete
of the team never changes a run in flight. ``single`` and ``multi`` name the built-in
modes: such a run is an ordinary run of that mode.
"""

from __future__ import annotations

from typing import TypeVar

from agents.teams.document import TeamDocument
from agents.teams.runnable import gathered_for, not_runnable
from agents.teams.shipped import SHIPPED
from api.app.errors import TeamNotFound, TeamNotRunnable
from api.app.teams import TeamBook
from bus.run_state import QuestionSettings, RunSettings
from bus.team_run import PinnedTeam

N = TypeVar("N", int, float)


async def pin(book: TeamBook | None, tenant_id: str, name: str) -> PinnedTeam:
    """The team ``name`` of the tenant at its latest version, as a run carries it.

    Raises:
        TeamNotFound: the tenant has no such team (or this deployment stores none).
        TeamNotRunnable: the team uses a built-in node a run cannot pass through yet.
    """
    if book is None:
        raise TeamNotFound(
            f"no team {name!r}: this deployment has no teams store", field="settings.team"
        )
    try:
        record = await book.get(tenant_id, name)
    except TeamNotFound as e:
        raise TeamNotFound(e.message, field="settings.team") from e
    faults = not_runnable(TeamDocument.model_validate(record.document))
    if faults:
        raise TeamNotRunnable(
            f"team {name!r} v{record.version} cannot run yet ({len(faults)} fault(s))",
            faults=[f.model_dump() for f in faults],
            field="settings.team",
        )
    return PinnedTeam(name=name, version=record.version, document=record.document)


def built_in(ask: QuestionSettings) -> QuestionSettings:
    """A question naming a built-in mode as its team asks for that mode."""
    if ask.team in SHIPPED:
        return ask.model_copy(update={"mode": ask.team, "team": None})
    return ask


def following(settings: RunSettings, team: PinnedTeam) -> RunSettings:
    """The run's settings when it follows ``team``: mode custom, the team pinned, its tool
    hops, and its budgets and deadline where they are tighter than the tenant's."""
    limits = TeamDocument.model_validate(team.document).limits
    budgets = settings.budgets.model_copy(
        update={
            "run_tokens": _least(settings.budgets.run_tokens, limits.budget_tokens),
            "run_cost_usd": _least(settings.budgets.run_cost_usd, limits.budget_usd),
        }
    )
    return settings.model_copy(
        update={
            "mode": "custom",
            "team": team,
            "max_tool_hops": limits.max_tool_hops,
            "budgets": budgets,
            "timeout_s": _least(settings.timeout_s, limits.deadline_s),
        }
    )


def sources_for(team: PinnedTeam, existing: list[str]) -> list[str]:
    """What a run of ``team`` that names no sources (nor its tenant) gathers before its
    first declared agent: the sources that agent declares, of those that exist for the
    run (``existing``); all that exist when it declares none."""
    declared = gathered_for(TeamDocument.model_validate(team.document))
    return [s for s in declared if s in existing] if declared else existing


def deadline(now: float, timeout_s: float, team: PinnedTeam | None) -> float:
    """When the run ends at the latest: the tenant's timeout, or the team's if shorter."""
    limit = None if team is None else TeamDocument.model_validate(team.document).limits.deadline_s
    return now + (_least(timeout_s, limit) or timeout_s)


def _least(a: N | None, b: N | None) -> N | None:
    if a is None:
        return b
    return a if b is None else min(a, b)
