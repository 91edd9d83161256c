"""Runs found by what changed last: filters, a keyset cursor, and the count before paging.

The REST list pages by start time (`RunStore.list`); A2A's ``ListTasks`` asks for the most
recently updated first, filtered by conversation, status and "updated since", with the total
count of matches. `RunStore.find` answers it with the statement built here.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field
from sqlalchemy import ColumnElement, Select, and_, func, or_, select

from bus.events import RunStatus
from bus.store.scope import Scope
from bus.store.tables import RunRow


class RunCursor(BaseModel):
    """Where a page ended: the last run's update time and id (ties broken by id)."""

    model_config = ConfigDict(frozen=True)

    updated_at: AwareDatetime
    run_id: str = Field(min_length=1, max_length=64)


class RunQuery(BaseModel):
    """Which runs to find; every filter is optional and they combine with AND."""

    model_config = ConfigDict(frozen=True)

    conversation_id: str | None = None
    statuses: frozenset[RunStatus] | None = None
    updated_since: AwareDatetime | None = None

    def where(self, scope: Scope) -> ColumnElement[bool]:
        """The rows ``scope`` sees that match every filter."""
        terms: list[ColumnElement[bool]] = [scope.where(RunRow)]
        if self.conversation_id is not None:
            terms.append(RunRow.conversation_id == self.conversation_id)
        if self.statuses is not None:
            terms.append(RunRow.status.in_(sorted(s.value for s in self.statuses)))
        if self.updated_since is not None:
            terms.append(RunRow.updated_at >= self.updated_since)
        return and_(*terms)


def page_statement(
    scope: Scope, query: RunQuery, limit: int, after: RunCursor | None
) -> Select[RunRow]:
    """Up to ``limit`` matching runs, most recently updated first, after ``after``."""
    stmt = select(RunRow).where(query.where(scope))
    if after is not None:
        at: datetime = after.updated_at
        stmt = stmt.where(
            or_(RunRow.updated_at < at, and_(RunRow.updated_at == at, RunRow.id < after.run_id))
        )
    return stmt.order_by(RunRow.updated_at.desc(), RunRow.id.desc()).limit(limit)


def count_statement(scope: Scope, query: RunQuery) -> Select[int]:
    """How many runs match, whatever the page."""
    return select(func.count()).select_from(RunRow).where(query.where(scope))
