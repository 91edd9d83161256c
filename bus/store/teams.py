"""The team repository: versions of each tenant's team documents.

Storing a team writes a new version (the previous ones stay: a run keeps the version it
started with, so an edit never changes a run in flight). Deleting a team marks its
versions deleted: it is no longer listed or started, and the runs in flight still read
their version. Storing the name again starts from the next version number.

The store keeps the document as given; whether it can run is checked before it is
stored (``agents.teams.check``, by the API).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, field_validator
from sqlalchemy import func, select, update

from bus.errors import StoreError
from bus.store.repository import Repository, insert_ignoring_conflicts, utcnow
from bus.store.scope import Scope
from bus.store.team_tables import TeamRow

#: How often a store retries a version another writer took first.
_RACES = 5


class TeamRecord(BaseModel):
    """One stored version of a team."""

    model_config = ConfigDict(frozen=True, from_attributes=True)

    tenant_id: str = Field(min_length=1, max_length=64)
    name: str = Field(min_length=1, max_length=64)
    version: int = Field(ge=0, description="0: a shipped mode; stored versions count from 1")
    document: dict[str, Any]
    created_at: AwareDatetime
    created_by: str = Field(max_length=255)
    deleted_at: AwareDatetime | None = None

    @field_validator("created_at", "deleted_at")
    @classmethod
    def _in_utc(cls, value: datetime | None) -> datetime | None:
        return None if value is None else value.astimezone(UTC)


class TeamStore(Repository):
    """Reads and writes tenants' team documents, version by version."""

    async def put(
        self, tenant_id: str, name: str, document: dict[str, Any], created_by: str
    ) -> TeamRecord:
        """Store ``document`` as the team's next version (the first: 1).

        Raises:
            StoreError: the database failed, or other writers kept taking the next version.
        """
        for _ in range(_RACES):
            async with self._scoped(Scope.tenant(tenant_id), "store the team") as session:
                last = await session.scalar(
                    select(func.max(TeamRow.version)).where(
                        TeamRow.tenant_id == tenant_id, TeamRow.name == name
                    )
                )
                values = {
                    "tenant_id": tenant_id,
                    "name": name,
                    "version": (last or 0) + 1,
                    "document": document,
                    "created_at": utcnow(),
                    "created_by": created_by,
                    "deleted_at": None,
                }
                stmt = insert_ignoring_conflicts(
                    session, TeamRow, values, ["tenant_id", "name", "version"]
                ).returning(TeamRow.version)
                if await session.scalar(stmt) is not None:
                    return TeamRecord.model_validate(values)
        raise StoreError(f"team {name!r} kept changing while it was stored; try again")

    async def get(self, tenant_id: str, name: str, version: int | None = None) -> TeamRecord | None:
        """A version of the team (deleted or not: a run in flight reads its own), or with
        no ``version`` the latest, None if the team was deleted or never stored."""
        where = [TeamRow.tenant_id == tenant_id, TeamRow.name == name]
        stmt = select(TeamRow).where(*where)
        if version is not None:
            stmt = stmt.where(TeamRow.version == version)
        else:
            stmt = stmt.order_by(TeamRow.version.desc()).limit(1)
        async with self._scoped(Scope.tenant(tenant_id), "read the team") as session:
            row = await session.scalar(stmt)
        if row is None or (version is None and row.deleted_at is not None):
            return None
        return TeamRecord.model_validate(row)

    async def list(self, tenant_id: str) -> list[TeamRecord]:
        """The tenant's teams (each at its latest version), by name; deleted ones left out."""
        latest = (
            select(TeamRow.name, func.max(TeamRow.version).label("version"))
            .where(TeamRow.tenant_id == tenant_id)
            .group_by(TeamRow.name)
            .subquery()
        )
        stmt = (
            select(TeamRow)
            .join(
                latest,
                (TeamRow.name == latest.c.name) & (TeamRow.version == latest.c.version),
            )
            .where(TeamRow.tenant_id == tenant_id, TeamRow.deleted_at.is_(None))
            .order_by(TeamRow.name)
        )
        async with self._scoped(Scope.tenant(tenant_id), "list the teams") as session:
            rows = (await session.scalars(stmt)).all()
        return [TeamRecord.model_validate(r) for r in rows]

    async def delete(self, tenant_id: str, name: str) -> bool:
        """Mark the team's versions deleted; False if it was not there to delete."""
        stmt = (
            update(TeamRow)
            .where(
                TeamRow.tenant_id == tenant_id,
                TeamRow.name == name,
                TeamRow.deleted_at.is_(None),
            )
            .values(deleted_at=utcnow())
            .returning(TeamRow.version)
            .execution_options(synchronize_session=False)
        )
        async with self._scoped(Scope.tenant(tenant_id), "delete the team") as session:
            return bool((await session.scalars(stmt)).all())
