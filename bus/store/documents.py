"""The documents repository: a tenant's uploaded documents (the chunks are in Qdrant).

Every statement is scoped to the caller's tenant in its WHERE clause and, on Postgres,
by row-level security as well (migration 0010).
"""

from __future__ import annotations

import builtins
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from datetime import UTC, datetime

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, field_validator
from sqlalchemy import Select, delete, select, text
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncSession

from bus.errors import StoreError
from bus.store.document_tables import DocumentRow
from bus.store.repository import Repository

_SET_TENANT = text("SELECT set_config('app.tenant_id', :tenant, true)")


class DocumentRecord(BaseModel):
    """A document as the catalogue holds it."""

    model_config = ConfigDict(frozen=True, from_attributes=True)

    tenant_id: str = Field(min_length=1, max_length=64)
    doc_id: str = Field(min_length=1, max_length=64)
    source: str = Field(max_length=1024)
    title: str = Field(max_length=1024)
    acl: list[str] = []
    uploaded_by: str = Field(max_length=255)
    job_id: str = Field(max_length=64)
    chunks: int = Field(ge=0)
    size_bytes: int = Field(ge=0)
    created_at: AwareDatetime
    updated_at: AwareDatetime

    @field_validator("created_at", "updated_at")
    @classmethod
    def _in_utc(cls, value: datetime) -> datetime:
        return value.astimezone(UTC)


class DocumentStore(Repository):
    """Records, lists and forgets a tenant's documents."""

    async def put(self, record: DocumentRecord) -> DocumentRecord:
        """Record an upload; a document uploaded again keeps its ``created_at``."""
        values = record.model_dump()
        kept = ("tenant_id", "doc_id", "created_at")
        changing = {k: v for k, v in values.items() if k not in kept}
        async with self._tenant_session(record.tenant_id, "record the document") as session:
            dialect = session.get_bind().dialect.name
            if dialect == "postgresql":
                stmt = postgresql.insert(DocumentRow).values(values)
                stmt = stmt.on_conflict_do_update(
                    index_elements=["tenant_id", "doc_id"], set_=changing
                )
            elif dialect == "sqlite":
                lite = sqlite.insert(DocumentRow).values(values)
                stmt = lite.on_conflict_do_update(
                    index_elements=["tenant_id", "doc_id"], set_=changing
                )
            else:
                raise StoreError(f"unsupported database {dialect!r}")
            await session.execute(stmt)
            row = await session.scalar(self._one(record.tenant_id, record.doc_id))
            assert row is not None
            return DocumentRecord.model_validate(row)

    async def get(self, tenant_id: str, doc_id: str) -> DocumentRecord | None:
        """The tenant's document, or None (also when another tenant has that id)."""
        async with self._tenant_session(tenant_id, "read the document") as session:
            row = await session.scalar(self._one(tenant_id, doc_id))
            return None if row is None else DocumentRecord.model_validate(row)

    async def list(self, tenant_id: str, limit: int = 200) -> builtins.list[DocumentRecord]:
        """The tenant's documents, the most recently uploaded first."""
        if limit < 1:
            raise ValueError(f"limit must be at least 1, got {limit}")
        stmt = (
            select(DocumentRow)
            .where(DocumentRow.tenant_id == tenant_id)
            .order_by(DocumentRow.updated_at.desc(), DocumentRow.doc_id)
            .limit(limit)
        )
        async with self._tenant_session(tenant_id, "list documents") as session:
            return [DocumentRecord.model_validate(r) for r in await session.scalars(stmt)]

    async def has_any(self, tenant_id: str) -> bool:
        """Whether the tenant has catalogued any document (what offers retrieval to runs)."""
        stmt = select(DocumentRow.doc_id).where(DocumentRow.tenant_id == tenant_id).limit(1)
        async with self._tenant_session(tenant_id, "look for documents") as session:
            return (await session.scalar(stmt)) is not None

    async def delete(self, tenant_id: str, doc_id: str) -> bool:
        """Forget the tenant's document; False when there was none."""
        stmt = delete(DocumentRow).where(
            DocumentRow.tenant_id == tenant_id, DocumentRow.doc_id == doc_id
        )
        async with self._tenant_session(tenant_id, "delete the document") as session:
            result = await session.execute(stmt)
            return bool(result.rowcount)  # type: ignore[attr-defined]

    @staticmethod
    def _one(tenant_id: str, doc_id: str) -> Select[DocumentRow]:
        return select(DocumentRow).where(
            DocumentRow.tenant_id == tenant_id, DocumentRow.doc_id == doc_id
        )

    @asynccontextmanager
    async def _tenant_session(
        self, tenant_id: str, action: str
    ) -> AsyncGenerator[AsyncSession, None]:
        async with self._session(action) as session:
            # SQLite has no row-level security; the WHERE clauses scope every statement.
            if session.get_bind().dialect.name == "postgresql":
                await session.execute(_SET_TENANT, {"tenant": tenant_id})
            yield session
