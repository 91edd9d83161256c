"""The memory role: after a run is done, remember what its question said about the user.

The finalizer of a run whose tenant has memory on sends the memory role one
`MemoryTask`: the user's own question, with where it was asked (only when the cheap first
pass, `agents.understanding.memory.rules.worth_remembering`, finds it may say something
about its user). The memory extractor (`agents.understanding.memory`: the model under a
JSON schema, or the rules) reads what the user states about themselves; each fact leaves
the step as a ledger record (`bus.ledger`) committed with the step, so a worker killed
mid-step and redelivered writes nothing twice, and the recorder writes it to the store
(`make_memory_applier`, idempotent by the record's key). Nothing else of the run
(documents, tool results, the answer) reaches this role, so none of it can become a memory.

The step runs after its run ended (the worker's ``after_run``): it never slows the answer
and never changes how the run ended.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from agents.deps import FaultPoint, no_fault
from agents.understanding.memory.ports import MemoryExtractor, Statement
from bus import keys, tenant_versions
from bus.commands import Command, MemoryTask
from bus.ledger import LedgerRecord
from bus.redis_io.shared_mux import mux_for
from bus.runtime.context import StepContext, StepResult
from bus.runtime.recorder import Applier
from bus.runtime.worker import Handler
from bus.store import MemoryStore, MemoryWrite

if TYPE_CHECKING:
    from redis.asyncio import Redis

#: The ledger records the memory step leaves.
MEMORY_KIND = "memory"
#: A tenant's stored preferences as they are now (a process cache kept current by the
#: tenant's settings version in Redis: no SQL read per step).
TenantSettings = Callable[[str], Awaitable[Mapping[str, Any]]]


def memory_records(
    command: Command, task: MemoryTask, statements: Sequence[Statement]
) -> list[LedgerRecord]:
    """One ledger record per statement the question makes about its user."""
    return [
        LedgerRecord(
            kind=MEMORY_KIND,
            key=f"{command.step_id}:{i}",
            tenant_id=command.tenant_id,
            data={
                "subject": command.subject,
                "topic": s.topic,
                "text": s.text,
                "run_id": command.run_id,
                "conversation_id": task.conversation_id,
                "message_id": task.message_id,
                "said_at": task.said_at,
            },
        )
        for i, s in enumerate(statements)
    ]


async def memory_on(tenant_settings: TenantSettings | None, tenant_id: str) -> bool:
    """Whether the tenant has memory on now (its admin's ``memory`` preference; default on)."""
    if tenant_settings is None:
        return True
    return (await tenant_settings(tenant_id)).get("memory") is not False


def make_memory(
    extractor: MemoryExtractor,
    tenant_settings: TenantSettings | None = None,
    *,
    fault: FaultPoint = no_fault,
) -> Handler:
    """The memory role's handler, reading questions with ``extractor``; with
    ``tenant_settings``, a tenant that turned memory off since the run started gets nothing
    remembered. ``fault`` is the test seam, called as ``memory_before_commit`` with the
    step's records made."""

    async def handle(ctx: StepContext, command: Command) -> StepResult:
        task = command.payload
        if not isinstance(task, MemoryTask):
            raise TypeError(f"the memory role got a {task.kind} payload")
        if not await memory_on(tenant_settings, command.tenant_id):
            return StepResult()
        records = memory_records(command, task, await extractor.extract(task.question))
        fault("memory_before_commit")  # tests only: die with the records uncommitted
        return StepResult(records=records)

    return handle


def _write(record: LedgerRecord) -> MemoryWrite:
    data = record.data
    message_id = data.get("message_id")
    return MemoryWrite(
        key=record.key,
        tenant_id=record.tenant_id,
        subject=str(data["subject"]),
        topic=str(data["topic"]),
        text=str(data["text"]),
        said_at=datetime.fromtimestamp(float(data["said_at"]), UTC),
        run_id=str(data["run_id"]) if data.get("run_id") else None,
        conversation_id=str(data["conversation_id"]) if data.get("conversation_id") else None,
        message_id=message_id if isinstance(message_id, int) else None,
    )


def make_memory_applier(
    store: MemoryStore, redis: Redis | None = None, *, shards: int = 1
) -> Applier:
    """The recorder's applier for memory records: one transaction per batch; then each
    writer is marked as having memories (`bus.keys.user_memories`), so the API's next
    question of theirs gathers from them without counting rows. A user's first mark also
    bumps their tenant's settings version (`bus.tenant_versions`): API processes cache
    that a user has none beside that version."""

    async def apply(records: Sequence[LedgerRecord]) -> None:
        writes = [_write(r) for r in records]
        await store.remember(writes)
        if redis is not None:
            owners = {(w.tenant_id, w.subject) for w in writes}
            for tenant_id, subject in sorted(owners):
                mark = keys.user_memories(tenant_id, subject)
                before = await mux_for(redis).execute("SET", mark, "1", "GET")
                if before not in (b"1", "1"):  # their first: a cached "none" must go
                    await tenant_versions.bump(redis, tenant_id, shards=shards)

    return apply
