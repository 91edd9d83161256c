"""Every tool call's audit record becomes a row of the tenant's hash-chained audit log.

The gateway worker commits each record with its step as a ledger record (`audit_record`);
the recorder appends them (`make_audit_applier`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bus import tracing
from bus.ledger import TRACE_KEY, LedgerRecord
from bus.readers import Contract
from bus.runtime.recorder import Applier
from bus.store.audit import AuditEntry, AuditStore
from gateway.outcome import AuditRecord

# Column widths of bus.store.tables.AuditRow; a model may send any name it likes.
_NAME_MAX = 255


def entry_of(record: AuditRecord) -> AuditEntry:
    """The store's row for one call (arguments already redacted by the chain)."""
    outcome = record.outcome
    return AuditEntry(
        tenant_id=record.tenant_id,
        subject=record.subject,
        run_id=record.run_id,
        agent=record.agent[:64],
        call_id=record.call_id[:_NAME_MAX],
        tool=record.tool[:_NAME_MAX],
        tool_version=record.tool_version[:64] if record.tool_version else None,
        args=record.args,
        status=outcome.status.value,
        code=outcome.code,
        message=outcome.message,
        blocked_host=outcome.blocked_host,
        duration_ms=record.duration_ms,
    )


AUDIT_KIND = "audit"
#: A gateway step writes the entry, the recorder (maybe of another release) reads it.
AUDIT_ENTRY = Contract("audit_entry", AuditEntry, 1)


def audit_record(key: str, record: AuditRecord) -> LedgerRecord:
    """The ledger record that carries one call's audit row in the gateway step's commit."""
    entry = entry_of(record)
    data: dict[str, Any] = {
        "entry": entry.model_dump(mode="json"),
        "once_per_call": record.side_effects,
    }
    if tracing.ENABLED and (here := tracing.current()) is not None:
        data[TRACE_KEY] = here.traceparent  # the recorder's batch span links to it
    return LedgerRecord(kind=AUDIT_KIND, key=key, tenant_id=entry.tenant_id, data=data)


def make_audit_applier(audit_store: AuditStore) -> Applier:
    """The recorder's applier for audit records: one transaction per batch, keys kept once."""

    async def apply(records: Sequence[LedgerRecord]) -> None:
        entries: list[tuple[AuditEntry, bool]] = []
        for r in records:
            entry = AUDIT_ENTRY.read(r.data["entry"] | {"record_key": r.key})
            if entry.tenant_id != r.tenant_id:
                raise ValueError(f"audit record {r.key!r} names another tenant than its entry")
            entries.append((entry, bool(r.data.get("once_per_call"))))
        await audit_store.append_many(entries)

    return apply
