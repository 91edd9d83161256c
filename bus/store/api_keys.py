"""The API keys repository: digests of keys, each mapped to a tenant, a subject, a role and
the holder's ACL groups.

The store never sees a key, only its digest; minting and checking keys is the API's job
(``api.credentials``). Lookups by key id are not tenant-scoped (authentication has no tenant
yet); listing and revoking are.
"""

from __future__ import annotations

import builtins
from datetime import UTC, datetime
from enum import StrEnum
from typing import Annotated

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, field_validator
from sqlalchemy import select, update
from sqlalchemy.exc import IntegrityError

from bus.commands import NAME_PATTERN
from bus.errors import StoreError
from bus.store.repository import Repository, utcnow
from bus.store.tables import ApiKeyRow


class KeyRole(StrEnum):
    """What a key may do: ``admin`` also manages the tenant's keys and settings."""

    USER = "user"
    ADMIN = "admin"


class ApiKeyRecord(BaseModel):
    """An API key as the store holds it (its digest, never the key)."""

    model_config = ConfigDict(frozen=True, from_attributes=True)

    id: str = Field(min_length=1, max_length=32, pattern=r"^[A-Za-z0-9]+$")
    key_hash: str = Field(min_length=64, max_length=64, pattern=r"^[0-9a-f]+$")
    tenant_id: str = Field(min_length=1, max_length=64)
    subject: str = Field(min_length=1, max_length=255)
    role: KeyRole = KeyRole.USER
    name: str | None = Field(default=None, max_length=120)
    created_at: AwareDatetime = Field(default_factory=utcnow)
    revoked_at: AwareDatetime | None = None
    groups: tuple[Annotated[str, Field(pattern=NAME_PATTERN)], ...] = Field(
        default=(), max_length=64, description="The holder's ACL groups (sorted, unique)."
    )

    @field_validator("groups")
    @classmethod
    def _sorted_unique(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(sorted(set(value)))

    @field_validator("created_at", "revoked_at")
    @classmethod
    def _in_utc(cls, value: datetime | None) -> datetime | None:
        return None if value is None else value.astimezone(UTC)

    @property
    def active(self) -> bool:
        """Whether the key still authenticates."""
        return self.revoked_at is None


class ApiKeyStore(Repository):
    """Reads and writes API key digests.

    Args:
        db: an engine (the store makes its own session factory) or a session factory. The
            caller owns the engine and disposes of it.
    """

    async def create(self, key: ApiKeyRecord) -> ApiKeyRecord:
        """Insert a key; raises ``StoreError`` if its id is taken or the database fails."""
        async with self._session("create the API key") as session:
            values = key.model_dump() | {"role": key.role.value, "groups": list(key.groups)}
            session.add(ApiKeyRow(**values))
            try:
                await session.flush()
            except IntegrityError as e:
                raise StoreError(
                    f"API key id {key.id!r} already exists",
                    hint="mint a new key; ids are random and should never repeat",
                ) from e
        return key

    async def get(self, key_id: str) -> ApiKeyRecord | None:
        """The key with this id, revoked or not, or None."""
        async with self._session("read the API key") as session:
            row = await session.scalar(select(ApiKeyRow).where(ApiKeyRow.id == key_id))
            return None if row is None else ApiKeyRecord.model_validate(row)

    async def list(
        self, tenant_id: str | None = None, *, include_revoked: bool = True
    ) -> builtins.list[ApiKeyRecord]:
        """Keys, oldest first; one tenant's when ``tenant_id`` is given, else every tenant's."""
        stmt = select(ApiKeyRow)
        if tenant_id is not None:
            stmt = stmt.where(ApiKeyRow.tenant_id == tenant_id)
        if not include_revoked:
            stmt = stmt.where(ApiKeyRow.revoked_at.is_(None))
        stmt = stmt.order_by(ApiKeyRow.created_at, ApiKeyRow.id)
        async with self._session("list API keys") as session:
            return [ApiKeyRecord.model_validate(row) for row in await session.scalars(stmt)]

    async def revoke(self, key_id: str, tenant_id: str | None = None) -> ApiKeyRecord | None:
        """Revoke a key (idempotent: a revoked key keeps its first revocation time).

        Args:
            key_id: the key to revoke.
            tenant_id: when given, only this tenant's key is touched; another tenant's id
                behaves as unknown.

        Returns:
            The key as stored afterwards, or None when there is no such key (for the tenant).
        """
        scope = [ApiKeyRow.id == key_id]
        if tenant_id is not None:
            scope.append(ApiKeyRow.tenant_id == tenant_id)
        stmt = (
            update(ApiKeyRow)
            .where(*scope, ApiKeyRow.revoked_at.is_(None))
            .values(revoked_at=utcnow())
            .execution_options(synchronize_session=False)
        )
        async with self._session("revoke the API key") as session:
            await session.execute(stmt)
            row = await session.scalar(select(ApiKeyRow).where(*scope))
            return None if row is None else ApiKeyRecord.model_validate(row)
