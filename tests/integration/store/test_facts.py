"""The knowledge graph's fact store on SQLite and Postgres (and its row-level security there)."""

from __future__ import annotations

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from bus.store import FactChunk, FactStore, StoredFact, Triple

LED = Triple(
    "Project Falcon", "project falcon", "name", "is led by", "Maria Chen", "maria chen", "name"
)
BASED = Triple("Maria Chen", "maria chen", "name", "works from", "Lisbon", "lisbon", "name")


def chunk(chunk_id: str, *facts: Triple, text: str = "Some text.") -> FactChunk:
    return FactChunk(chunk_id, f"{chunk_id}.md", "Title", "", 0, text, facts)


@pytest.fixture
def facts(engine: AsyncEngine) -> FactStore:
    return FactStore(engine)


async def test_a_batch_stored_twice_is_stored_once(facts: FactStore) -> None:
    batch = [chunk("c1", LED), chunk("c2"), chunk("c3", BASED, LED)]
    assert await facts.put("t1", "d1", "v1", ["*"], batch) == 3
    assert await facts.put("t1", "d1", "v1", ["*"], batch) == 3  # a redelivery
    assert await facts.count("t1") == 3
    found = await facts.find("t1", (), {"maria chen"}, limit=10)
    assert sorted((f.chunk_id, f.triple.relation) for f in found) == [
        ("c1", "is led by"),
        ("c3", "is led by"),
        ("c3", "works from"),
    ]
    chunks = await facts.chunks("t1", [("c3", "v1"), ("c2", "v1")])
    assert list(chunks) == [("c3", "v1")]  # a chunk without facts is not kept


async def test_a_restricted_documents_facts_reach_only_its_groups(facts: FactStore) -> None:
    await facts.put("t1", "open", "v1", ["*"], [chunk("c1", LED)])
    await facts.put("t1", "hr", "v1", ["hr", "admins"], [chunk("c2", BASED)])
    await facts.put("t2", "other", "v1", ["*"], [chunk("c3", BASED)])

    def chunk_ids(found: list[StoredFact]) -> set[str]:
        return {f.chunk_id for f in found}

    keys = {"maria chen"}
    assert chunk_ids(await facts.find("t1", (), keys, limit=10)) == {"c1"}
    assert chunk_ids(await facts.find("t1", {"sales"}, keys, limit=10)) == {"c1"}
    assert chunk_ids(await facts.find("t1", {"hr"}, keys, limit=10)) == {"c1", "c2"}
    assert chunk_ids(await facts.find("t2", {"hr"}, keys, limit=10)) == {"c3"}
    assert await facts.chunks("t2", [("c1", "v1")]) == {}  # another tenant's chunk


async def test_a_new_version_replaces_the_facts_and_a_delete_removes_them(
    facts: FactStore,
) -> None:
    await facts.put("t1", "d1", "v1", ["*"], [chunk("c1", LED)])
    await facts.put("t1", "d2", "v1", ["*"], [chunk("c9", LED)])
    await facts.put("t1", "d1", "v2", ["hr"], [chunk("c1", BASED)])
    assert await facts.count("t1", "d1") == 2  # both versions until the new one finishes
    assert await facts.drop_other_versions("t1", "d1", keep_version="v2") == 1
    found = await facts.find("t1", {"hr"}, {"maria chen"}, limit=10)
    assert {(f.doc_id, f.version, f.triple.relation) for f in found} == {
        ("d1", "v2", "works from"),
        ("d2", "v1", "is led by"),
    }
    assert await facts.find("t1", (), {"lisbon"}, limit=10) == []  # v2 is hr only
    assert await facts.drop_other_versions("t1", "d1") == 1
    assert await facts.count("t1", "d1") == 0
    assert await facts.count("t1") == 1  # the other document keeps its facts


ONLY_POSTGRES = pytest.mark.parametrize(
    "store_url", [pytest.param("postgres", marks=pytest.mark.postgres)], indirect=True
)


@ONLY_POSTGRES
async def test_facts_are_tenant_isolated_by_row_level_security(
    engine: AsyncEngine, superuser_engine: AsyncEngine
) -> None:
    facts = FactStore(engine)  # the app role, which row-level security binds
    await facts.put("t1", "d1", "v1", ["*"], [chunk("c1", LED)])
    await facts.put("t2", "d1", "v1", ["*"], [chunk("c1", BASED)])
    for table in ("kg_facts", "kg_chunks", "kg_acl"):
        async with engine.connect() as conn, conn.begin():
            # No tenant set in this transaction: the policy shows nothing at all.
            assert (await conn.execute(text(f"SELECT count(*) FROM {table}"))).scalar() == 0
        async with superuser_engine.connect() as conn:
            assert (await conn.execute(text(f"SELECT count(*) FROM {table}"))).scalar() == 2
