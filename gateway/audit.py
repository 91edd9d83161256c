"""The audit hook: every finished call becomes a row of the tenant's hash-chained audit log."""

from __future__ import annotations

from bus.store.audit import AuditEntry, AuditStore
from gateway.outcome import AuditRecord
from gateway.ports import OutcomeHook

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


def make_audit_hook(audit_store: AuditStore) -> OutcomeHook:
    """An `OutcomeHook` (for `GatewayDeps.on_outcome`) that appends each call to `audit_store`.

    A side-effecting call runs at most once per call id, so its row is written at most once
    too: the gateway worker re-sends the recorded audit record of a redelivered call (in case
    the first write failed) and the store keeps the first. A failure propagates (see
    `gateway.chain.invoke`), so the step is retried rather than the call going unaudited.
    """

    async def append(record: AuditRecord) -> None:
        await audit_store.append(entry_of(record), once_per_call=record.side_effects)

    return append
