"""WebhookSecretStore conformance on SQLite and Postgres (where RLS keeps tenants apart)."""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from bus.store import Scope, WebhookSecretStore
from bus.store.scope import set_statement


async def test_a_secret_is_made_once_then_rotated(engine: AsyncEngine) -> None:
    store = WebhookSecretStore(engine)

    assert await store.get("t1") is None
    first = await store.create_if_absent("t1", "whsec_AAAA", "root")
    again = await store.create_if_absent("t1", "whsec_BBBB", "someone")
    rotated = await store.replace("t1", "whsec_CCCC", "root")
    made_by_rotation = await store.replace("t2", "whsec_DDDD", "admin")

    assert first.secret == again.secret == "whsec_AAAA" and again.created_by == "root"
    assert rotated.secret == "whsec_CCCC" and await store.get("t1") == rotated
    assert made_by_rotation.secret == "whsec_DDDD" and made_by_rotation.tenant_id == "t2"


async def test_a_transaction_sees_only_its_tenants_secret(engine: AsyncEngine) -> None:
    store = WebhookSecretStore(engine)
    await store.create_if_absent("t1", "whsec_AAAA", "root")
    await store.create_if_absent("t2", "whsec_BBBB", "root")

    async with engine.connect() as conn:
        if conn.dialect.name != "postgresql":
            return  # SQLite has no row-level security; the store's WHERE clauses scope it
        unscoped = await conn.scalar(text("SELECT count(*) FROM webhook_secrets"))
        await conn.execute(set_statement(), Scope.tenant("t1").settings())
        scoped = (await conn.execute(text("SELECT tenant_id FROM webhook_secrets"))).all()

    assert unscoped == 0 and [r[0] for r in scoped] == ["t1"]
