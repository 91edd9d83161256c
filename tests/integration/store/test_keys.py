"""ApiKeyStore conformance: the same behaviour on SQLite and Postgres."""

from __future__ import annotations

import hashlib

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from bus.errors import StoreError
from bus.store import ApiKeyRecord, ApiKeyStore, KeyRole


@pytest.fixture
def keys(engine: AsyncEngine) -> ApiKeyStore:
    return ApiKeyStore(engine)


def a_key(key_id: str = "k1", tenant_id: str = "tenant-a", **changes: object) -> ApiKeyRecord:
    fields: dict[str, object] = {
        "id": key_id,
        "key_hash": hashlib.sha256(key_id.encode()).hexdigest(),
        "tenant_id": tenant_id,
        "subject": "alice",
    }
    return ApiKeyRecord.model_validate(fields | changes)


async def test_create_then_get_returns_the_key(keys: ApiKeyStore) -> None:
    key = a_key(role=KeyRole.ADMIN, name="ci")

    await keys.create(key)

    assert await keys.get("k1") == key
    assert await keys.get("nope") is None


async def test_a_taken_id_raises_store_error(keys: ApiKeyStore) -> None:
    await keys.create(a_key())

    with pytest.raises(StoreError, match="already exists"):
        await keys.create(a_key(tenant_id="tenant-b"))


async def test_list_is_scoped_to_a_tenant_when_asked(keys: ApiKeyStore) -> None:
    await keys.create(a_key("k1"))
    await keys.create(a_key("k2", tenant_id="tenant-b"))

    assert [k.id for k in await keys.list("tenant-a")] == ["k1"]
    assert {k.id for k in await keys.list()} == {"k1", "k2"}


async def test_revoke_is_idempotent_and_keeps_the_first_time(keys: ApiKeyStore) -> None:
    await keys.create(a_key())

    first = await keys.revoke("k1")
    again = await keys.revoke("k1")

    assert first is not None and not first.active and first.revoked_at is not None
    assert again is not None and again.revoked_at == first.revoked_at
    assert [k.id for k in await keys.list("tenant-a", include_revoked=False)] == []


async def test_revoke_scoped_to_another_tenant_touches_nothing(keys: ApiKeyStore) -> None:
    await keys.create(a_key())

    assert await keys.revoke("k1", tenant_id="tenant-b") is None
    stored = await keys.get("k1")
    assert stored is not None and stored.active


async def test_a_keys_groups_are_stored_sorted_and_unique(keys: ApiKeyStore) -> None:
    await keys.create(a_key("k1", groups=("sales", "finance", "sales")))
    await keys.create(a_key("k2"))

    got = await keys.get("k1")
    assert got is not None and got.groups == ("finance", "sales")
    assert [k.groups for k in await keys.list("tenant-a")] == [("finance", "sales"), ()]


async def test_a_group_name_follows_the_bus_pattern() -> None:
    with pytest.raises(ValueError, match="groups"):
        a_key(groups=("not a group",))
