"""`agentbus erase` then `agentbus audit verify`, as an operator runs them (issue 45,
item 1): a real erasure verifies; a row rewritten and marked redacted behind the
application's back fails the check, which names the row."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable

import pytest
from sqlalchemy import text

from api.compose.settings import AppSettings
from bus.store import AuditEntry, Scope, Stores, make_engine, open_store
from tests import warm_cli
from tests.conftest import TEST_REDIS_URL
from tests.processes import cli


@pytest.fixture
async def stores(make_settings: Callable[..., AppSettings]) -> AsyncIterator[Stores]:
    async with open_store(make_settings().bus, migrate=True) as opened:
        yield opened


async def verify(env: dict[str, str]) -> tuple[int, str]:
    """``agentbus audit verify``: its exit status and what it printed."""
    done = await warm_cli.run(["audit", "verify"], {**os.environ, **env}, merged=True)
    return done.returncode, done.stdout


async def test_a_real_erasure_verifies_and_a_forged_redaction_is_named(
    stores: Stores, make_settings: Callable[..., AppSettings]
) -> None:
    s = make_settings()
    assert stores.audit is not None
    for n, who in enumerate(["alice", "bob", "alice", "bob"]):
        await stores.audit.append(
            AuditEntry(
                tenant_id="t1",
                subject=who,
                run_id=f"run-{who}",
                agent="researcher",
                call_id=f"call-{n}",
                tool="calculator",
                args={"expression": f"{who}'s secret"},
                status="ok",
                code="ok",
                duration_ms=1.0,
            )
        )
    env = {"AGENTBUS_REDIS_URL": TEST_REDIS_URL, "AGENTBUS_DATA_DIR": str(s.bus.data_dir)}

    await cli(["erase", "--user", "alice", "--tenant", "t1"], env)
    after_erasure = await verify(env)
    rows = await stores.audit.list(Scope.tenant("t1"), limit=100)
    [bobs] = [r for r in rows if r.seq == 2]
    engine = make_engine(s.bus.resolved_database_url())
    try:
        async with engine.begin() as conn:  # someone with write access to the table
            await conn.execute(
                text(
                    "UPDATE audit_log SET run_id = '', call_id = '', args = '\"[erased]\"',"
                    " message = '[erased]', redacted_at = CURRENT_TIMESTAMP WHERE seq = 2"
                )
            )
    finally:
        await engine.dispose()
    after_forgery = await verify(env)

    assert after_erasure[0] == 0, after_erasure[1]
    status, out = after_forgery
    assert status == 1, out
    assert f"t1: BROKEN at row id {bobs.id} (seq 2)" in out and "no redaction record" in out
    # 4 rows, the redaction record and the tombstone.
    assert "t1: ok, 6 rows" in after_erasure[1] and "2 rows redacted" in after_erasure[1]
