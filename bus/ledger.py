"""Ledger records: writes for the SQL store that travel inside a step's commit.

A step that must leave a durable record (the gateway's audit row of each tool call) does
not write the database itself, on its run's critical path. It returns the record with its
other effects; the commit script appends it to its shard's ``recorder`` stream in the same
transaction that marks the step done (a transactional outbox), so a committed step's
record cannot be lost and an uncommitted step's cannot be written. A recorder consumes
the stream in batches, one SQL transaction per batch (`bus.runtime.recorder`).

Every record has a key that is the same on every delivery (its step id and position), so
a recorder that crashed after its transaction but before its ack writes nothing twice.

With tracing on, ``data[TRACE_KEY]`` is the W3C ``traceparent`` of the step that wrote the
record, and the recorder's span of each batch links to the traces of its records. With
tracing off the key is absent: records are the same as before tracing existed.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

#: The key in ``data`` of the writing step's ``traceparent`` (only with tracing on).
TRACE_KEY = "trace"


class LedgerRecord(BaseModel):
    """One write for the store.

    Attributes:
        kind: what the write is (``audit``); selects the recorder's applier.
        key: the record's idempotency key, unique and stable across deliveries.
        tenant_id: whose data it is.
        data: the write itself, as the applier of ``kind`` reads it (and `TRACE_KEY`).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_version: int = 1
    kind: str = Field(min_length=1, max_length=32)
    key: str = Field(min_length=1, max_length=200)
    tenant_id: str = Field(min_length=1, max_length=64)
    data: dict[str, Any]

    @property
    def traceparent(self) -> str | None:
        """The W3C trace context of the step that wrote the record (None: tracing off)."""
        found = self.data.get(TRACE_KEY)
        return found if isinstance(found, str) else None
