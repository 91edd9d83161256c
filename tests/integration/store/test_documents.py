"""The documents catalogue on SQLite and Postgres (and its row-level security there)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from bus.store import DocumentRecord, DocumentStore

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def a_doc(doc_id: str = "d1", tenant: str = "t1", **changes: object) -> DocumentRecord:
    values: dict[str, object] = {
        "tenant_id": tenant,
        "doc_id": doc_id,
        "source": f"{doc_id}.md",
        "title": f"Title of {doc_id}",
        "acl": ["*"],
        "uploaded_by": "root",
        "job_id": "job-1",
        "chunks": 3,
        "size_bytes": 120,
        "created_at": T0,
        "updated_at": T0,
    }
    return DocumentRecord.model_validate(values | changes)


@pytest.fixture
def docs(engine: AsyncEngine) -> DocumentStore:
    return DocumentStore(engine)


async def test_put_list_get_delete_stay_inside_the_tenant(docs: DocumentStore) -> None:
    await docs.put(a_doc("d1"))
    await docs.put(a_doc("d2", updated_at=T0 + timedelta(minutes=1), acl=["hr"]))
    await docs.put(a_doc("d1", tenant="t2"))
    assert [d.doc_id for d in await docs.list("t1")] == ["d2", "d1"]  # newest first
    assert (await docs.get("t1", "d2") or a_doc()).acl == ["hr"]
    assert await docs.get("t3", "d1") is None
    assert await docs.delete("t3", "d1") is False  # another tenant's id: untouched
    assert await docs.delete("t1", "d1") is True
    assert await docs.delete("t1", "d1") is False
    assert [d.doc_id for d in await docs.list("t1")] == ["d2"]
    assert [d.doc_id for d in await docs.list("t2")] == ["d1"]


async def test_has_any_answers_per_tenant(docs: DocumentStore) -> None:
    assert await docs.has_any("t1") is False
    await docs.put(a_doc("d1", tenant="t2"))
    assert (await docs.has_any("t1"), await docs.has_any("t2")) == (False, True)
    await docs.delete("t2", "d1")
    assert await docs.has_any("t2") is False


async def test_uploading_again_replaces_the_row_but_keeps_when_it_was_first_added(
    docs: DocumentStore,
) -> None:
    await docs.put(a_doc("d1"))
    later = T0 + timedelta(hours=1)
    again = await docs.put(
        a_doc("d1", job_id="job-2", chunks=9, created_at=later, updated_at=later)
    )
    assert (again.job_id, again.chunks, again.created_at, again.updated_at) == (
        "job-2",
        9,
        T0,
        later,
    )
    assert len(await docs.list("t1")) == 1


ONLY_POSTGRES = pytest.mark.parametrize(
    "store_url", [pytest.param("postgres", marks=pytest.mark.postgres)], indirect=True
)


@ONLY_POSTGRES
async def test_the_catalogue_works_under_row_level_security(
    engine: AsyncEngine, superuser_engine: AsyncEngine
) -> None:
    # On Postgres ``engine`` is the app role, which row-level security binds.
    docs = DocumentStore(engine)
    await docs.put(a_doc("d1", tenant="t1"))  # passes WITH CHECK: the store set its tenant
    await docs.put(a_doc("d2", tenant="t2"))
    assert [d.doc_id for d in await docs.list("t1")] == ["d1"]
    async with engine.connect() as conn, conn.begin():
        # No tenant set in this transaction: the policy shows nothing at all.
        assert (await conn.execute(text("SELECT count(*) FROM documents"))).scalar() == 0
    async with superuser_engine.connect() as conn:
        assert (await conn.execute(text("SELECT count(*) FROM documents"))).scalar() == 2
