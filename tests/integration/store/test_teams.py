"""TeamStore conformance: versions, a run's version kept through edits and deletion, tenants
apart; the same behaviour on SQLite and Postgres."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from bus.store import TeamStore

DOC = {"edges": [{"from": "intake", "on": "admitted", "to": "finalizer"}]}


@pytest.fixture
def teams(engine: AsyncEngine) -> TeamStore:
    return TeamStore(engine)


def doc(description: str) -> dict[str, object]:
    return {**DOC, "description": description}


async def test_each_store_is_a_new_version_and_the_old_ones_stay(teams: TeamStore) -> None:
    first = await teams.put("t1", "triage", doc("one"), "alice")
    second = await teams.put("t1", "triage", doc("two"), "bob")

    assert (first.version, second.version) == (1, 2)
    latest = await teams.get("t1", "triage")
    assert latest is not None
    assert (latest.version, latest.document["description"], latest.created_by) == (2, "two", "bob")
    kept = await teams.get("t1", "triage", 1)
    assert kept is not None and kept.document["description"] == "one"


async def test_a_deleted_team_is_gone_but_its_versions_still_read(teams: TeamStore) -> None:
    await teams.put("t1", "triage", doc("one"), "alice")

    assert await teams.delete("t1", "triage")
    assert not await teams.delete("t1", "triage")
    assert await teams.get("t1", "triage") is None
    assert await teams.list("t1") == []
    in_flight = await teams.get("t1", "triage", 1)
    assert in_flight is not None and in_flight.deleted_at is not None

    again = await teams.put("t1", "triage", doc("again"), "alice")
    assert again.version == 2
    assert [t.version for t in await teams.list("t1")] == [2]


async def test_a_tenant_sees_only_its_own_teams(teams: TeamStore) -> None:
    await teams.put("t1", "b-team", doc("t1's b"), "alice")
    await teams.put("t1", "a-team", doc("t1's a"), "alice")
    await teams.put("t2", "a-team", doc("t2's a"), "carol")

    assert [(t.name, t.document["description"]) for t in await teams.list("t1")] == [
        ("a-team", "t1's a"),
        ("b-team", "t1's b"),
    ]
    assert await teams.get("t2", "b-team") is None
    assert not await teams.delete("t2", "b-team")


async def test_concurrent_stores_each_get_their_own_version(teams: TeamStore) -> None:
    stored = await asyncio.gather(*(teams.put("t1", "busy", doc(str(n)), "a") for n in range(4)))

    assert sorted(r.version for r in stored) == [1, 2, 3, 4]
