"""Redactions that prove themselves (issue 45, item 1), on SQLite and Postgres.

Erasing a user blanks the audit rows about them and appends a redaction record to the
chain; `AuditStore.verify` checks every redacted row against it. Someone who can write the
table (here: SQL as a user row-level security does not bind) and rewrites a row, marking
it redacted, breaks the chain at that row, as does editing a row erasure redacted.
"""

from __future__ import annotations

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from bus.store import ERASED, AuditStore, ErasureId, ErasureStore, Scope
from bus.store.audit_chain import AuditLogRecord, ChainBreak
from bus.store.audit_redaction import MARKER, REDACT_TOOL, Redaction
from tests.integration.store.test_audit import entry, sql

ERASURE = ErasureId(id="erasure:test", by="root")


@pytest.fixture
def audit(engine: AsyncEngine) -> AuditStore:
    return AuditStore(engine)


async def chain_of(audit: AuditStore, tenant: str = "t1") -> list[AuditLogRecord]:
    """The tenant's rows, oldest first."""
    return sorted(await audit.list(Scope.tenant(tenant), limit=100), key=lambda r: r.seq)


async def broken(audit: AuditStore) -> ChainBreak:
    [chain] = (await audit.verify("t1")).chains
    assert chain.broken is not None, "the chain verified"
    return chain.broken


async def alice_and_bob(audit: AuditStore) -> None:
    """Rows 1-4: alice's run, bob's run, alice's run, bob's run."""
    for n, (who, run) in enumerate([("alice", "ra"), ("bob", "rb")] * 2):
        await audit.append(entry(n, subject=who, run_id=run, message=f"{who} asked"))


async def erase_alice(engine: AsyncEngine) -> int:
    return await ErasureStore(engine).redact_audit("t1", "alice", ["ra"], 500, ERASURE)


async def test_a_real_redaction_verifies_and_its_record_names_what_was_removed(
    audit: AuditStore, engine: AsyncEngine
) -> None:
    await alice_and_bob(audit)
    before = {r.seq: r.row_hash for r in await chain_of(audit)}

    assert await erase_alice(engine) == 2

    rows = await chain_of(audit)
    [chain] = (await audit.verify("t1")).chains
    assert chain.ok, chain.broken
    assert (chain.rows, chain.redacted) == (5, 2)
    record = rows[-1]
    assert (record.seq, record.tool, record.call_id) == (5, REDACT_TOOL, ERASURE.id)
    said = Redaction.model_validate(record.args_value())
    assert (said.erasure, said.by) == (ERASURE.id, "root")
    assert [(r.seq, r.row_hash) for r in said.rows] == [(1, before[1]), (3, before[3])]
    for row in (rows[0], rows[2]):
        assert row.redacted_at == said.at and row.subject == ERASED
        assert {name: getattr(row, name) for name in MARKER} == MARKER
        assert row.row_hash == before[row.seq]  # its place in the chain is unchanged
    assert "alice" not in record.args + record.message


async def test_a_row_edited_and_marked_redacted_without_a_record_breaks_the_chain(
    audit: AuditStore, superuser_engine: AsyncEngine
) -> None:
    await alice_and_bob(audit)
    [_, bobs, *_] = await chain_of(audit)
    # What an erasure leaves, forged: the marker, redacted_at, no redaction record.
    await sql(
        superuser_engine,
        "UPDATE audit_log SET run_id = '', call_id = '', args = :args, message = :erased,"
        " redacted_at = CURRENT_TIMESTAMP WHERE seq = 2",
        args=MARKER["args"],
        erased=ERASED,
    )

    at = await broken(audit)
    assert (at.row_id, at.seq) == (bobs.id, 2)
    assert "no redaction record" in at.reason


async def test_a_redacted_row_holding_anything_but_the_marker_breaks_the_chain(
    audit: AuditStore, engine: AsyncEngine, superuser_engine: AsyncEngine
) -> None:
    await alice_and_bob(audit)
    await erase_alice(engine)
    first = (await chain_of(audit))[0]
    await sql(superuser_engine, "UPDATE audit_log SET message = 'rewritten' WHERE seq = 1")

    at = await broken(audit)
    assert (at.row_id, at.seq) == (first.id, 1)
    assert "other than the redaction marker in message" in at.reason


@pytest.mark.parametrize(
    ("column", "value"),
    [("subject", "'mallory'"), ("status", "'error'"), ("redacted_at", "CURRENT_TIMESTAMP")],
)
async def test_editing_what_a_redaction_left_breaks_the_chain(
    audit: AuditStore,
    engine: AsyncEngine,
    superuser_engine: AsyncEngine,
    column: str,
    value: str,
) -> None:
    await alice_and_bob(audit)
    await erase_alice(engine)
    await sql(superuser_engine, f"UPDATE audit_log SET {column} = {value} WHERE seq = 3")

    at = await broken(audit)
    assert at.seq == 3 and "edited after its redaction" in at.reason


async def test_a_row_marked_redacted_beside_a_real_redaction_is_still_caught(
    audit: AuditStore, engine: AsyncEngine, superuser_engine: AsyncEngine
) -> None:
    await alice_and_bob(audit)
    await erase_alice(engine)  # rows 1 and 3, and the record at seq 5
    await sql(
        superuser_engine,
        "UPDATE audit_log SET run_id = '', call_id = '', args = :args, message = :erased,"
        " redacted_at = CURRENT_TIMESTAMP WHERE seq = 4",
        args=MARKER["args"],
        erased=ERASED,
    )

    at = await broken(audit)
    assert at.seq == 4 and "no redaction record" in at.reason


async def test_erasing_twice_redacts_nothing_more_and_records_nothing_more(
    audit: AuditStore, engine: AsyncEngine
) -> None:
    await alice_and_bob(audit)
    await erase_alice(engine)
    assert await erase_alice(engine) == 0
    [chain] = (await audit.verify("t1")).chains
    assert chain.ok and chain.rows == 5
