"""The fact repository: a tenant's knowledge graph, facts with the chunks they came from.

Written by the retrieval role as it stores a document version's batches, idempotently
(every row's key is derived from the chunk, the version and the fact's place in the
chunk, and inserts ignore a row already there), so a redelivered batch writes nothing
twice. The batch that completes a version drops every other version of the document: a
re-ingest replaces the facts, the empty version a delete publishes removes them.

Every statement is scoped to the tenant in its WHERE clause and, on Postgres, by
row-level security as well; a read returns only facts of document versions whose ACL
lists one of the caller's groups or ``*``, decided inside the query.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Iterable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from sqlalchemy import and_, delete, exists, func, or_, select, text
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.sql.dml import Insert

from bus.errors import StoreError
from bus.store.fact_tables import FactAclRow, FactChunkRow, FactRow
from bus.store.repository import Repository
from bus.store.tables import Base

_SET_TENANT = text("SELECT set_config('app.tenant_id', :tenant, true)")
#: Rows per INSERT statement (SQLite caps the bound parameters of one statement).
_ROWS_PER_INSERT = 400
_PUBLIC = "*"


@dataclass(frozen=True, slots=True)
class Triple:
    """A fact: subject, relation, object, each end with its normalised key and kind.

    ``kind`` is ``name`` (a named entity) or ``figure`` (a number, with its unit).
    """

    subject: str
    subject_key: str
    subject_kind: str
    relation: str
    object: str
    object_key: str
    object_kind: str


@dataclass(frozen=True, slots=True)
class FactChunk:
    """A chunk and the facts extracted from it, as one batch of a document writes them."""

    chunk_id: str
    source: str
    title: str
    heading: str
    position: int
    text: str
    facts: tuple[Triple, ...]


@dataclass(frozen=True, slots=True)
class StoredFact:
    """A fact as a read returns it: the triple and the chunk (and version) it came from."""

    chunk_id: str
    version: str
    doc_id: str
    triple: Triple


@dataclass(frozen=True, slots=True)
class SourceChunk:
    """The chunk a fact came from (the text a graph passage shows)."""

    chunk_id: str
    version: str
    doc_id: str
    source: str
    title: str
    heading: str
    position: int
    text: str


#: Each table's primary key: a row already there is left alone.
_KEYS: dict[type[Base], list[str]] = {
    FactAclRow: ["tenant_id", "doc_id", "version", "grp"],
    FactChunkRow: ["tenant_id", "chunk_id", "version"],
    FactRow: ["tenant_id", "chunk_id", "version", "n"],
}


def _insert_ignoring(dialect: str, model: type[Base], rows: list[dict[str, Any]]) -> Insert:
    keys = _KEYS[model]
    if dialect == "postgresql":
        return postgresql.insert(model).values(rows).on_conflict_do_nothing(index_elements=keys)
    if dialect == "sqlite":
        return sqlite.insert(model).values(rows).on_conflict_do_nothing(index_elements=keys)
    raise StoreError(f"unsupported database {dialect!r}")


class FactStore(Repository):
    """Writes, reads and drops a tenant's facts."""

    async def put(
        self,
        tenant_id: str,
        doc_id: str,
        version: str,
        acl: Sequence[str],
        chunks: Sequence[FactChunk],
    ) -> int:
        """Store one batch of a document version's chunks and facts; returns the facts.

        Idempotent: a batch stored again (a redelivery) inserts nothing new.
        """
        base = {"tenant_id": tenant_id, "doc_id": doc_id, "version": version}
        acl_rows = [{**base, "grp": g} for g in sorted(set(acl) or {_PUBLIC})]
        chunk_rows: list[dict[str, Any]] = []
        fact_rows: list[dict[str, Any]] = []
        for c in chunks:
            if not c.facts:
                continue
            chunk_rows.append(
                {
                    **base,
                    "chunk_id": c.chunk_id,
                    "source": c.source[:2048],
                    "title": c.title[:1024],
                    "heading": c.heading[:1024],
                    "position": c.position,
                    "text": c.text,
                }
            )
            for n, t in enumerate(c.facts):
                fact_rows.append({**base, "chunk_id": c.chunk_id, "n": n, **_triple_row(t)})
        async with self._tenant_session(tenant_id, "store facts") as session:
            dialect = session.get_bind().dialect.name
            for model, rows in ((FactAclRow, acl_rows), (FactChunkRow, chunk_rows)):
                for part in _slices(rows):
                    await session.execute(_insert_ignoring(dialect, model, part))
            for part in _slices(fact_rows):
                await session.execute(_insert_ignoring(dialect, FactRow, part))
        return len(fact_rows)

    async def stored_chunks(self, tenant_id: str, version: str, ids: Iterable[str]) -> set[str]:
        """Which of these chunks have facts stored under this version (a batch stored
        before, whose extraction need not run again)."""
        wanted = sorted(set(ids))
        if not wanted:
            return set()
        stmt = select(FactChunkRow.chunk_id).where(
            FactChunkRow.tenant_id == tenant_id,
            FactChunkRow.version == version,
            FactChunkRow.chunk_id.in_(wanted),
        )
        async with self._tenant_session(tenant_id, "read fact chunks") as session:
            return set(await session.scalars(stmt))

    async def drop_other_versions(
        self, tenant_id: str, doc_id: str, keep_version: str | None = None
    ) -> int:
        """Delete the document's facts (of versions other than ``keep_version``); returns
        the facts deleted."""
        deleted = 0
        async with self._tenant_session(tenant_id, "drop facts") as session:
            for model in (FactRow, FactChunkRow, FactAclRow):
                stmt = delete(model).where(model.tenant_id == tenant_id, model.doc_id == doc_id)
                if keep_version is not None:
                    stmt = stmt.where(model.version != keep_version)
                result = await session.execute(stmt)
                if model is FactRow:
                    deleted = int(result.rowcount)  # type: ignore[attr-defined]
        return deleted

    async def find(
        self, tenant_id: str, groups: Iterable[str], keys: Iterable[str], *, limit: int
    ) -> list[StoredFact]:
        """Facts whose subject or object key is one of ``keys``, that ``groups`` may read."""
        wanted = sorted(set(keys))
        if not wanted:
            return []
        readable = sorted({_PUBLIC, *groups})
        acl = FactAclRow
        may_read = exists().where(
            acl.tenant_id == FactRow.tenant_id,
            acl.doc_id == FactRow.doc_id,
            acl.version == FactRow.version,
            acl.grp.in_(readable),
        )
        stmt = (
            select(FactRow)
            .where(
                FactRow.tenant_id == tenant_id,
                or_(FactRow.subject_key.in_(wanted), FactRow.object_key.in_(wanted)),
                may_read,
            )
            .order_by(FactRow.doc_id, FactRow.chunk_id, FactRow.n)
            .limit(limit)
        )
        async with self._tenant_session(tenant_id, "read facts") as session:
            rows = list(await session.scalars(stmt))
        return [StoredFact(r.chunk_id, r.version, r.doc_id, _triple_of(r)) for r in rows]

    async def chunks(
        self, tenant_id: str, refs: Iterable[tuple[str, str]]
    ) -> dict[tuple[str, str], SourceChunk]:
        """The source chunks of facts read before, by (chunk id, version)."""
        wanted = set(refs)
        if not wanted:
            return {}
        ids = sorted({chunk for chunk, _ in wanted})
        stmt = select(FactChunkRow).where(
            FactChunkRow.tenant_id == tenant_id, FactChunkRow.chunk_id.in_(ids)
        )
        async with self._tenant_session(tenant_id, "read fact chunks") as session:
            rows = list(await session.scalars(stmt))
        return {
            (r.chunk_id, r.version): SourceChunk(
                r.chunk_id, r.version, r.doc_id, r.source, r.title, r.heading, r.position, r.text
            )
            for r in rows
            if (r.chunk_id, r.version) in wanted
        }

    async def count(self, tenant_id: str, doc_id: str | None = None) -> int:
        """Facts stored for the tenant (or one of its documents), whoever may read them."""
        where = [FactRow.tenant_id == tenant_id]
        if doc_id is not None:
            where.append(FactRow.doc_id == doc_id)
        stmt = select(func.count()).select_from(FactRow).where(and_(*where))
        async with self._tenant_session(tenant_id, "count facts") as session:
            return int(await session.scalar(stmt) or 0)

    @asynccontextmanager
    async def _tenant_session(
        self, tenant_id: str, action: str
    ) -> AsyncGenerator[AsyncSession, None]:
        async with self._session(action) as session:
            # SQLite has no row-level security; the WHERE clauses scope every statement.
            if session.get_bind().dialect.name == "postgresql":
                await session.execute(_SET_TENANT, {"tenant": tenant_id})
            yield session


def _triple_row(t: Triple) -> dict[str, str]:
    return {
        "subject": t.subject[:255],
        "subject_key": t.subject_key[:255],
        "subject_kind": t.subject_kind,
        "relation": t.relation[:255],
        "object": t.object[:255],
        "object_key": t.object_key[:255],
        "object_kind": t.object_kind,
    }


def _triple_of(r: FactRow) -> Triple:
    return Triple(
        r.subject, r.subject_key, r.subject_kind, r.relation, r.object, r.object_key, r.object_kind
    )


def _slices(rows: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    return [rows[i : i + _ROWS_PER_INSERT] for i in range(0, len(rows), _ROWS_PER_INSERT)]
