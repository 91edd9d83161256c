"""The audit hook: every finished call becomes a row of the tenant's hash-chained audit log."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from bus.ledger import LedgerRecord
from bus.runtime.recorder import Applier
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


AUDIT_KIND = "audit"


def audit_record(key: str, record: AuditRecord) -> LedgerRecord:
    """The ledger record that carries one call's audit row in the gateway step's commit."""
    entry = entry_of(record)
    return LedgerRecord(
        kind=AUDIT_KIND,
        key=key,
        tenant_id=entry.tenant_id,
        data={"entry": entry.model_dump(mode="json"), "once_per_call": record.side_effects},
    )


def make_audit_applier(audit_store: AuditStore) -> Applier:
    """The recorder's applier for audit records: one transaction per batch, keys kept once."""

    async def apply(records: Sequence[LedgerRecord]) -> None:
        entries: list[tuple[AuditEntry, bool]] = []
        for r in records:
            entry = AuditEntry.model_validate(r.data["entry"] | {"record_key": r.key})
            if entry.tenant_id != r.tenant_id:
                raise ValueError(f"audit record {r.key!r} names another tenant than its entry")
            entries.append((entry, bool(r.data.get("once_per_call"))))
        await audit_store.append_many(entries)

    return apply


def make_audit_hook(audit_store: AuditStore) -> OutcomeHook:
    """An `OutcomeHook` (for `GatewayDeps.on_outcome`) that appends each call to `audit_store`.

    A side-effecting call runs at most once per call id, so its row is written at most once
    too: the gateway worker re-sends the recorded audit record of a redelivered call (in case
    the first write failed) and the store keeps the first. A failure propagates (see
    `gateway.chain.invoke`), so the step is retried rather than the call going unaudited.
    """

    appender = GroupAppender(audit_store)

    async def append(record: AuditRecord) -> None:
        await appender.append(entry_of(record), once_per_call=record.side_effects)

    return append


class GroupAppender:
    """Group commit: entries that arrive while a write is in flight share the next one.

    A caller still returns only once its row is committed; at concurrency 1 nothing
    changes, under load one transaction carries many calls (each tenant's chain is
    extended in arrival order inside it).
    """

    def __init__(self, store: AuditStore, *, max_batch: int = 256) -> None:
        self._store = store
        self._max_batch = max_batch
        self._queue: list[tuple[AuditEntry, bool, asyncio.Future[None]]] = []
        self._flusher: asyncio.Task[None] | None = None

    async def append(self, entry: AuditEntry, *, once_per_call: bool = False) -> None:
        """Append one entry; returns after the transaction that carries it committed."""
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._queue.append((entry, once_per_call, done))
        if self._flusher is None or self._flusher.done():
            self._flusher = asyncio.create_task(self._flush())
        await done

    async def _flush(self) -> None:
        while self._queue:
            batch = self._queue[: self._max_batch]
            del self._queue[: self._max_batch]
            try:
                await self._store.append_many([(e, once) for e, once, _ in batch])
            except Exception as e:  # every caller of the batch sees the failure and retries
                for _, _, done in batch:
                    if not done.done():
                        done.set_exception(e)
                continue
            for _, _, done in batch:
                if not done.done():
                    done.set_result(None)
