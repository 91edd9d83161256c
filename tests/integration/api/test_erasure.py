"""Erasing a user through the API, on SQLite and on Postgres as the app role.

alice (t1) asks a question, uploads a document and schedules a question; bob (t1) and
another alice (t2) do the same kinds of things. Once t1's admin erases alice, nothing of
hers is readable anywhere: not in any SQL table, not in Redis (keys, values, stream
entries), not in the vector store; bob's and t2's alice's data is all still there, and
the audit chain still verifies, with a tombstone that does not name her.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from redis.asyncio import Redis
from sqlalchemy import select

from bus import keys
from bus.store import KeyRole, MemoryWrite, RunRecord, RunStatus, make_engine
from bus.store.audit_redaction import REDACT_TOOL
from bus.store.repository import utcnow
from bus.store.scope import Scope, set_statement
from bus.store.tables import Base
from retrieval.embedders.hashing import HashingEmbedder
from retrieval.models import Access
from retrieval.settings import RetrievalSettings
from retrieval.stack import Retrieval, open_retrieval
from tests.integration.api.conftest import Api, StartApi
from tests.integration.api.test_rest import wait_status
from tests.support import wait_for

YEARLY = "0 9 1 1 *"


@pytest.fixture
async def retrieval(tmp_path: Path) -> AsyncIterator[Retrieval]:
    settings = RetrievalSettings(data_dir=tmp_path, embedder="hashing")
    async with open_retrieval(settings, embedder=HashingEmbedder(), path=tmp_path / "q") as r:
        yield r


async def upload(api: Api, key: str, name: str, body: str) -> None:
    files = {"files": (name, body.encode(), "text/markdown")}
    up = await api.http.post("/api/v1/documents", files=files, headers=api.auth(key))
    assert up.status_code == 202, up.text
    job = up.json()["job_id"]

    async def done() -> bool:
        got = await api.http.get(f"/api/v1/documents/jobs/{job}", headers=api.auth(key))
        return got.json()["status"] == "done"

    await wait_for(done, within=60, interval=0.05)


async def ask(api: Api, key: str, question: str) -> dict[str, Any]:
    started = await api.http.post(
        "/api/v1/runs", json={"question": question}, headers=api.auth(key)
    )
    assert started.status_code == 202, started.text
    return await wait_status(api, key, started.json()["run_id"])


async def audited(api: Api, tenant: str, run_id: str) -> None:
    """Wait until the recorder wrote the run's tool call to the audit log."""
    assert api.stores.audit is not None
    audit = api.stores.audit

    async def written() -> bool:
        return bool(await audit.list(Scope.tenant(tenant), run_id=run_id))

    await wait_for(written, within=20)


async def sql_cells(api: Api) -> list[tuple[str, str, str]]:
    """(table, tenant, cell text) of every cell of every table, read as the operator."""
    engine = make_engine(api.settings.bus.resolved_database_url())
    cells: list[tuple[str, str, str]] = []
    try:
        async with engine.begin() as conn:
            if conn.dialect.name == "postgresql":
                await conn.execute(set_statement(), Scope.operator().settings())
            for table in Base.metadata.sorted_tables:
                for row in (await conn.execute(select(table))).mappings():
                    tenant = str(row.get("tenant_id"))
                    cells += [(table.name, tenant, str(v)) for v in row.values() if v is not None]
    finally:
        await engine.dispose()
    return cells


async def redis_texts(client: Redis) -> list[str]:
    """Every key name and every value Redis holds (stream entries, hashes, lists, sets)."""
    redis: Any = client  # redis-py types these replies as sync-or-async
    found: list[str] = []
    async for raw in redis.scan_iter(count=500):
        key = raw.decode()
        found.append(key)
        kind = (await redis.type(key)).decode()
        values: list[Any] = []
        if kind == "string":
            values = [await redis.get(key)]
        elif kind == "hash":
            values = [*(await redis.hgetall(key)).items()]
        elif kind == "list":
            values = await redis.lrange(key, 0, -1)
        elif kind == "set":
            values = list(await redis.smembers(key))
        elif kind == "zset":
            values = await redis.zrange(key, 0, -1)
        elif kind == "stream":
            values = [fields for _, fields in await redis.xrange(key)]
        found.append(repr(values))
    return found


async def test_an_admin_erases_a_user_and_nothing_of_theirs_is_left_readable(
    start_api: StartApi, retrieval: Retrieval, store_backend: dict[str, Any]
) -> None:
    api = await start_api(retrieval=retrieval, api_key_cache_s=0, **store_backend)
    root = await api.key("t1", "root", KeyRole.ADMIN)
    alice = await api.key("t1", "alice", KeyRole.ADMIN)  # an admin: she uploads documents
    bob = await api.key("t1", "bob")
    other_alice = await api.key("t2", "alice", KeyRole.ADMIN)

    # Questions first: a run started after the uploads would quote the tenant's passages
    # (single mode searches them first), and a quote in bob's run is bob's, not alice's.
    mine = await ask(api, alice, "What is 23 × 19? asks alice about tapirs")
    bobs = await ask(api, bob, "What is 23 × 19? asks bob about llamas")
    theirs = await ask(api, other_alice, "What is 23 × 19? asks t2 alice about tapirs")
    await upload(api, alice, "alice-notes.md", "# Alice notes\n\nThe zebracorn sleeps at noon.")
    await upload(api, root, "handbook.md", "# Handbook\n\nThe okapi eats at dawn.")
    await upload(api, other_alice, "t2-notes.md", "# T2 notes\n\nThe zebracorn of t2 sings.")
    for tenant, run in (("t1", mine), ("t1", bobs), ("t2", theirs)):
        assert run["status"] == "done", run
        await audited(api, tenant, run["id"])
    scheduled = await api.http.post(
        "/api/v1/schedules",
        json={"cron": YEARLY, "question": "tapirs, every year"},
        headers=api.auth(alice),
    )
    assert scheduled.status_code == 201, scheduled.text
    team = {"edges": [{"from": "intake", "on": "admitted", "to": "finalizer"}]}
    for key in (alice, other_alice):  # a team names who stored it
        applied = await api.http.put("/api/v1/teams/mine", json=team, headers=api.auth(key))
        assert applied.status_code == 200, applied.text
    assert api.stores.memories is not None
    await api.stores.memories.remember(
        [
            MemoryWrite(f"m-{t}-{s}", t, s, "work", f"I work with {animals}.", utcnow())
            for t, s, animals in (
                ("t1", "alice", "tapirs"),
                ("t1", "bob", "llamas"),
                ("t2", "alice", "tapirs"),
            )
        ]
    )

    assert await api.redis.exists(keys.user_memories("t1", "alice"))  # her questions read it
    refused = await api.http.delete("/api/v1/users/alice", headers=api.auth(bob))
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "admin_only"

    erased = await api.http.delete("/api/v1/users/alice", headers=api.auth(root))
    assert erased.status_code == 200, erased.text
    report = erased.json()
    counts = report["erased"]
    assert (report["tenant_id"], report["subject"], report["by"]) == ("t1", "alice", "root")
    assert counts["runs"] == 1 and counts["conversations"] >= 1
    assert counts["messages"] == 2 and counts["schedules"] == 1 and counts["api_keys"] == 1
    assert counts["documents"] == 1 and counts["document_chunks"] >= 1
    assert counts["audit_rows_redacted"] >= 1 and counts["redis_keys"] >= 1
    assert counts["memories"] == 1
    assert not await api.redis.exists(keys.user_memories("t1", "alice"))  # her mark too
    bobs_memories = await api.stores.memories.list(Scope.user("t1", "bob"))
    assert [m.text for m in bobs_memories] == ["I work with llamas."]

    # Her key is gone; bob's data and t2's alice's are untouched.
    gone = await api.http.get("/api/v1/runs", headers=api.auth(alice))
    assert gone.status_code == 401
    assert (
        (await api.http.get(f"/api/v1/runs/{bobs['id']}", headers=api.auth(bob)))
        .json()["question"]
        .endswith("llamas")
    )
    kept = await api.http.get(f"/api/v1/runs/{theirs['id']}", headers=api.auth(other_alice))
    assert kept.status_code == 200 and kept.json()["subject"] == "alice"
    listed = await api.http.get("/api/v1/documents", headers=api.auth(root))
    assert [d["source"] for d in listed.json()] == ["handbook.md"]

    # The vector store: her passages leave once the retrieval role ran the removal.
    admin_t1 = Access("t1")

    async def passages_gone() -> bool:
        hits = await retrieval.searcher.search("zebracorn", admin_t1, method="keyword")
        return not any("zebracorn" in h.chunk.text for h in hits)

    await wait_for(passages_gone, within=30, interval=0.05)
    okapi = await retrieval.searcher.search("okapi", admin_t1, method="keyword")
    assert any("okapi" in h.chunk.text for h in okapi)
    t2_hits = await retrieval.searcher.search("zebracorn", Access("t2"), method="keyword")
    assert any("zebracorn" in h.chunk.text for h in t2_hits)

    # SQL: no cell of t1 names her, her run, her conversation, her question or her file.
    needles = [mine["id"], mine["conversation_id"], "tapirs", "zebracorn", "alice-notes"]
    cells = await sql_cells(api)
    leaks = [
        (table, [n for n in [*needles, '"alice"'] if n in cell], cell[:200])
        for table, tenant, cell in cells
        if tenant == "t1"
        and (cell == "alice" or '"alice"' in cell or any(n in cell for n in needles))
    ]
    assert leaks == []
    assert any(t == "t2" and "tapirs" in c for _, t, c in cells)  # t2's alice kept hers

    # Redis: no key or value holds her run, her conversation, her question or her file.
    texts = await redis_texts(api.redis)
    redis_needles = [mine["id"], mine["conversation_id"], "asks alice", "alice-notes"]
    assert [t for t in texts if any(n in t for n in redis_needles)] == []
    assert any(theirs["id"] in t for t in texts)

    # The chain still verifies; the tombstone says what and who, not whom.
    assert api.stores.audit is not None
    [chain] = (await api.stores.audit.verify("t1")).chains
    assert chain.ok, chain.broken
    assert chain.redacted == counts["audit_rows_redacted"]
    [tomb] = await api.stores.audit.list(Scope.tenant("t1"), limit=1)
    assert (tomb.code, tomb.subject, tomb.seq) == ("user_erased", "root", report["audit_seq"])
    assert tomb.args_value()["erased"] == counts and "alice" not in tomb.args + tomb.message
    # Each batch of redactions is a record in the chain, of this erasure, that vouches for
    # the rows it blanked (what `verify` checked them against above).
    rows = await api.stores.audit.list(Scope.tenant("t1"), limit=500)
    records = [r for r in rows if r.tool == REDACT_TOOL]
    assert records and {r.call_id for r in records} == {tomb.call_id}
    vouched = [row["seq"] for r in records for row in r.args_value()["rows"]]
    assert sorted(vouched) == sorted(r.seq for r in rows if r.redacted_at is not None)


async def test_a_user_erases_themselves_and_a_run_in_flight_is_cancelled_first(
    start_api: StartApi, store_backend: dict[str, Any]
) -> None:
    api = await start_api(api_key_cache_s=0, **store_backend)
    bob = await api.key("t1", "bob")
    carol = await api.key("t1", "carol")
    run = await ask(api, bob, "What is 23 × 19? asks bob")
    await audited(api, "t1", run["id"])
    # A run of carol's that is still running: erasing her now would race it.
    await api.stores.runs.create(
        RunRecord(
            id="carol-running",
            tenant_id="t1",
            subject="carol",
            mode="single",
            question="still going",
            status=RunStatus.RUNNING,
        )
    )

    unconfirmed = await api.http.delete("/api/v1/me?confirm=bob", headers=api.auth(carol))
    assert unconfirmed.status_code == 422
    assert unconfirmed.json()["error"]["field"] == "confirm"
    # Her run in flight is cancelled and waited for (no step of it is under way), then
    # erased with the rest.
    gone = await api.http.delete("/api/v1/me?confirm=carol", headers=api.auth(carol))
    assert gone.status_code == 200, gone.text
    assert gone.json()["erased"]["runs_cancelled"] == 1 and gone.json()["erased"]["runs"] == 1
    root0 = await api.key("t1", "root0", KeyRole.ADMIN)
    assert (
        await api.http.get("/api/v1/runs/carol-running", headers=api.auth(root0))
    ).status_code == 404

    erased = await api.http.delete("/api/v1/me?confirm=bob", headers=api.auth(bob))
    assert erased.status_code == 200, erased.text
    report = erased.json()
    assert report["by"] == "self" and report["erased"]["runs"] == 1
    assert (await api.http.get("/api/v1/runs", headers=api.auth(bob))).status_code == 401
    assert api.stores.audit is not None
    [tomb] = await api.stores.audit.list(Scope.tenant("t1"), limit=1)
    assert tomb.subject == "[erased]" and tomb.args_value()["by"] == "self"
    assert (await api.stores.audit.verify("t1")).ok

    again = await api.http.delete(
        "/api/v1/users/bob", headers=api.auth(await api.key("t1", "root", KeyRole.ADMIN))
    )
    assert again.status_code == 200 and not any(again.json()["erased"].values())
    root = await api.key("t1", "root2", KeyRole.ADMIN)
    too_long = await api.http.delete("/api/v1/users/" + "x" * 300, headers=api.auth(root))
    assert too_long.status_code == 422
    assert (await api.http.delete("/api/v1/me?confirm=bob")).status_code == 401

    # Erasing the admin who erased bob keeps that erasure's record whole.
    assert (await api.http.delete("/api/v1/users/root", headers=api.auth(root))).status_code == 200
    tombs = await api.stores.audit.list(Scope.tenant("t1"), limit=5)
    by_root = [t for t in tombs if t.code == "user_erased" and t.subject == "root"]
    assert [t.args_value()["by"] for t in by_root] == ["root"]
    assert (await api.stores.audit.verify("t1")).ok
