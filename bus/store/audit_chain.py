"""The audit log's hash chain: how a row is hashed, and how a chain is checked.

A row's hash is SHA-256 over a canonical JSON document of every column but ``id`` (an
autoincrement a restore may renumber) and ``row_hash`` itself, ``prev_hash`` included. The
first row of a chain has ``prev_hash`` GENESIS. The chain is broken when a row's hash does
not match its columns (edited), when its ``prev_hash`` is not the hash of the row before it,
or when its ``seq`` is not one more than the row before it (a row inserted or deleted), or
when the last row is not the one the head records (rows deleted from the end).

Retention prunes a chain only from its start, and records the last pruned row's seq and
hash in the tenant's anchor (``audit_anchors``): the check then starts there, so the first
row left must follow the anchor exactly as it followed the pruned row. A row that erasing
its user redacted (``redacted_at`` set) keeps its seq, ``prev_hash`` and ``row_hash``: its
place in the chain is checked as any row's, and its content against the redaction record
the erasure appended to the chain (`bus.store.audit_redaction`), not against ``row_hash``.

A head and its last row rewritten together, with the hashes recomputed, cannot be told
from the real thing by the database alone: keep the head hash `agentbus audit verify`
prints somewhere else (a ticket, a log shipper) to anchor it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Awaitable, Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from pydantic import AwareDatetime, BaseModel, ConfigDict, field_validator

#: ``prev_hash`` of the first row of every chain.
GENESIS = "0" * 64
#: Bumped if the hashed document ever changes shape, so old rows still verify.
HASH_VERSION = 1
_HASHED = (
    "tenant_id",
    "seq",
    "subject",
    "run_id",
    "agent",
    "call_id",
    "tool",
    "tool_version",
    "args",
    "status",
    "code",
    "message",
    "blocked_host",
    "prev_hash",
)


def canonical_json(value: Any) -> str:
    """One spelling for a JSON value: sorted keys, no spaces, UTF-8 kept as is."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def hash_row(values: Mapping[str, Any]) -> str:
    """The SHA-256 (hex) of a row's columns; see the module docstring for what is covered."""
    created: datetime = values["created_at"]
    doc = {name: values[name] for name in _HASHED} | {
        "v": HASH_VERSION,
        "created_at": created.astimezone(UTC).isoformat(timespec="microseconds"),
        "duration_ms": float(values["duration_ms"]),
    }
    return hashlib.sha256(canonical_json(doc).encode("utf-8")).hexdigest()


class AuditLogRecord(BaseModel):
    """One stored audit row; ``args`` is canonical JSON text (decode it with `args_value`)."""

    model_config = ConfigDict(frozen=True, from_attributes=True)

    id: int
    tenant_id: str
    seq: int
    created_at: AwareDatetime
    subject: str
    run_id: str
    agent: str
    call_id: str
    tool: str
    tool_version: str | None
    args: str
    status: str
    code: str
    message: str
    blocked_host: str | None
    duration_ms: float
    prev_hash: str
    row_hash: str
    redacted_at: AwareDatetime | None = None

    @field_validator("created_at")
    @classmethod
    def _in_utc(cls, value: datetime) -> datetime:
        return value.astimezone(UTC)

    @field_validator("redacted_at")
    @classmethod
    def _redacted_in_utc(cls, value: datetime | None) -> datetime | None:
        return None if value is None else value.astimezone(UTC)

    def args_value(self) -> Any:
        """The redacted arguments as a JSON value."""
        return json.loads(self.args)

    def expected_hash(self) -> str:
        """The hash this row's columns should have."""
        return hash_row(self.model_dump())


class ChainBreak(BaseModel):
    """The first place a chain does not hold.

    Attributes:
        reason: what is wrong, in words an operator can act on.
        row_id: the row's id, when the break is at a row (not at the head).
        seq: the row's place in the chain.
        record: the row as stored, when there is one.
    """

    model_config = ConfigDict(frozen=True)

    reason: str
    row_id: int | None = None
    seq: int | None = None
    record: AuditLogRecord | None = None


class ChainReport(BaseModel):
    """The result of checking one tenant's chain.

    Attributes:
        tenant_id: whose chain.
        rows: rows checked (up to the first break).
        head_seq: the last seq the head records (None when the head is missing).
        head_hash: the hash the head records; keep it elsewhere to anchor the chain.
        anchor_seq: the last seq retention pruned (the check started after it), or None
            when the chain was never pruned (it started at seq 1).
        anchor_hash: that pruned row's hash, which the first row left must follow.
        redacted: rows checked whose content erasure blanked (their place was checked).
        broken: the first break, or None when the chain holds.
    """

    model_config = ConfigDict(frozen=True)

    tenant_id: str
    rows: int
    head_seq: int | None
    head_hash: str | None
    anchor_seq: int | None = None
    anchor_hash: str | None = None
    redacted: int = 0
    broken: ChainBreak | None = None

    @property
    def ok(self) -> bool:
        """True when the chain holds from its first row to its head."""
        return self.broken is None


class AuditReport(BaseModel):
    """Every chain checked by one `AuditStore.verify`."""

    model_config = ConfigDict(frozen=True)

    chains: list[ChainReport]

    @property
    def ok(self) -> bool:
        """True when every chain holds."""
        return all(c.ok for c in self.chains)


PageReader = Callable[[int, "int | None"], Awaitable[list[AuditLogRecord]]]
#: Why a redacted row is not what its redaction left, or None if it is
#: (`bus.store.audit_redaction.redaction_check`).
RedactionCheck = Callable[[AuditLogRecord], "str | None"]


def check_link(
    record: AuditLogRecord, prev_seq: int, prev_hash: str, check_redacted: RedactionCheck
) -> str | None:
    """Why `record` does not follow the row (prev_seq, prev_hash), or None if it does."""
    if record.seq != prev_seq + 1:
        return (
            f"seq {record.seq} follows seq {prev_seq}: rows were deleted or inserted "
            "before this one"
        )
    if record.redacted_at is not None:
        why = check_redacted(record)
        if why is not None:
            return why
    elif record.row_hash != record.expected_hash():
        return "the row's hash does not match its contents: the row was edited"
    if record.prev_hash != prev_hash:
        return (
            "prev_hash is not the hash of the row before it: the row before was edited, "
            "replaced or deleted"
        )
    return None


async def walk_chain(
    tenant_id: str,
    head: tuple[int, str] | None,
    read_page: PageReader,
    anchor: tuple[int, str] | None,
    check_redacted: RedactionCheck,
) -> ChainReport:
    """Check one chain page by page against its head (seq, hash), read before the rows,
    from its anchor (seq, hash of the last pruned row) or, never pruned, from its start;
    each redacted row with ``check_redacted``."""
    head_seq, head_hash = head if head is not None else (None, None)
    anchor_seq, anchor_hash = anchor if anchor is not None else (None, None)
    seq, last_hash = anchor if anchor is not None else (0, GENESIS)
    rows = redacted = 0

    def report(broken: ChainBreak | None) -> ChainReport:
        return ChainReport(
            tenant_id=tenant_id,
            rows=rows,
            head_seq=head_seq,
            head_hash=head_hash,
            anchor_seq=anchor_seq,
            anchor_hash=anchor_hash,
            redacted=redacted,
            broken=broken,
        )

    while True:
        page = await read_page(seq, head_seq)
        for record in page:
            why = check_link(record, seq, last_hash, check_redacted)
            if why is not None:
                return report(
                    ChainBreak(reason=why, row_id=record.id, seq=record.seq, record=record)
                )
            seq, last_hash, rows = record.seq, record.row_hash, rows + 1
            redacted += record.redacted_at is not None
        if not page:
            break
    if head is None:
        return report(ChainBreak(reason="the chain has rows but no head: the head was deleted"))
    if seq != head_seq:
        return report(
            ChainBreak(
                reason=f"the chain ends at seq {seq} but its head says {head_seq}: "
                "rows at the end were deleted",
                seq=seq + 1,
            )
        )
    if last_hash != head_hash:
        return report(
            ChainBreak(
                reason="the last row's hash is not the one its head records: the last row "
                "was replaced",
                seq=seq,
            )
        )
    return report(None)
