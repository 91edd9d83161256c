"""Redactions that prove themselves: what a redacted audit row holds, and how it is checked.

Erasing a user blanks the content of the audit rows about them (`bus.store.erasure`); the
rows keep their seq, ``prev_hash`` and ``row_hash``, so the chain still links, but their
content can no longer be checked against ``row_hash``. Each batch of redactions therefore
appends a redaction record to the same chain, in the same transaction: which rows (their
seq), when, by which erasure and whom, the hash of what was removed (the row's original
hash, so the record ties the blanked row to its place) and the hash of what is left.

`agentbus audit verify` checks every redacted row against its record: it must have one,
later in the chain; the record's hash of what was removed must be the row's ``row_hash``;
the blanked columns must hold exactly the marker (`MARKER`); and the columns left must
hash to what the record says, so a row edited and marked redacted by someone who can
write the table, but not append to the chain unnoticed, breaks the chain at that row.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, ValidationError

from bus.store.audit_chain import AuditLogRecord, RedactionCheck, canonical_json

#: What a redacted audit row, or a bookkeeping column that named the user, says instead.
ERASED = "[erased]"
#: The agent of the rows an erasure writes to the audit log: its tombstone
#: (`api.app.erasure`) and its redaction records. Erasure never redacts these.
ERASURE_AGENT = "erasure"
#: The tool of a redaction record.
REDACT_TOOL = "redact_audit_rows"
#: The most rows one redaction record lists (a batch redacts at most this many).
MAX_ROWS_PER_RECORD = 200
#: The columns a redaction blanks, and what each holds afterwards. ``subject`` also reads
#: ``[erased]`` where it was the erased user's (the record's hash of what is left binds it).
MARKER: Mapping[str, Any] = {
    "run_id": "",
    "call_id": "",
    "args": canonical_json(ERASED),
    "message": ERASED,
    "blocked_host": None,
}


class RedactedRow(BaseModel):
    """One row a redaction record vouches for.

    Attributes:
        seq: the row's place in the chain.
        row_hash: the hash of what was removed (the row's content before, which is its
            ``row_hash``).
        redacted_hash: the hash of the row as redacted (`hash_row` of what is left).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    seq: int = Field(ge=1)
    row_hash: str = Field(min_length=64, max_length=64)
    redacted_hash: str = Field(min_length=64, max_length=64)


class Redaction(BaseModel):
    """The ``args`` of a redaction record.

    Attributes:
        erasure: the erasure's id (its tombstone's ``call_id``).
        by: who erased (an admin's id, or ``self``).
        at: when the rows were redacted (their ``redacted_at``).
        rows: the rows redacted.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    erasure: str
    by: str
    at: AwareDatetime
    rows: list[RedactedRow] = Field(min_length=1, max_length=MAX_ROWS_PER_RECORD)


def redacted(record: AuditLogRecord, subject: str, at: datetime) -> AuditLogRecord:
    """``record`` as erasing ``subject`` leaves it: the marker, and their name blanked."""
    blank = dict(MARKER) | {"redacted_at": at}
    if record.subject == subject:
        blank["subject"] = ERASED
    return record.model_copy(update=blank)


def redacted_row(record: AuditLogRecord, subject: str, at: datetime) -> RedactedRow:
    """What a redaction record says of ``record`` once erasing ``subject`` blanked it."""
    after = redacted(record, subject, at)
    return RedactedRow(
        seq=record.seq, row_hash=record.expected_hash(), redacted_hash=after.expected_hash()
    )


class _Vouched(BaseModel):
    """A row's entry in the redaction records: what was said of it, and by which record."""

    model_config = ConfigDict(frozen=True)

    row: RedactedRow
    at: AwareDatetime
    record_seq: int


def redaction_check(records: Iterable[AuditLogRecord]) -> RedactionCheck:
    """The check of redacted rows against the tenant's redaction records ``records``.

    A record whose ``args`` are not a redaction is ignored (its own hash is checked as
    any row's), as is a second record of a row already vouched for.
    """
    vouched: dict[int, _Vouched] = {}
    for record in records:
        try:
            redaction = Redaction.model_validate(record.args_value())
        except (ValidationError, ValueError):
            continue
        for row in redaction.rows:
            vouched.setdefault(row.seq, _Vouched(row=row, at=redaction.at, record_seq=record.seq))

    def check(record: AuditLogRecord) -> str | None:
        return _why_not_redacted(record, vouched.get(record.seq))

    return check


def _why_not_redacted(record: AuditLogRecord, vouched: _Vouched | None) -> str | None:
    """Why the redacted ``record`` is not what its redaction left, or None if it is."""
    if vouched is None or vouched.record_seq <= record.seq:
        return (
            "the row is marked redacted but no redaction record later in the chain "
            "redacted it: the row was edited and marked redacted"
        )
    where = f"the redaction record at seq {vouched.record_seq}"
    if vouched.row.row_hash != record.row_hash:
        return (
            f"{where} holds another hash of what was removed than this row's: the row was replaced"
        )
    wrong = [name for name, blank in MARKER.items() if getattr(record, name) != blank]
    if wrong:
        return (
            f"the redacted row holds something other than the redaction marker in "
            f"{', '.join(wrong)}: it was edited after its redaction"
        )
    if record.redacted_at != vouched.at or record.expected_hash() != vouched.row.redacted_hash:
        return (
            f"what is left of the redacted row is not what {where} says: it was edited "
            "after its redaction"
        )
    return None


def redaction_args(erasure: str, by: str, at: datetime, rows: list[RedactedRow]) -> dict[str, Any]:
    """The ``args`` of a redaction record (JSON values)."""
    return Redaction(erasure=erasure, by=by, at=at, rows=rows).model_dump(mode="json")


__all__ = [
    "ERASED",
    "ERASURE_AGENT",
    "MARKER",
    "MAX_ROWS_PER_RECORD",
    "REDACT_TOOL",
    "RedactedRow",
    "Redaction",
    "redacted",
    "redacted_row",
    "redaction_args",
    "redaction_check",
]
