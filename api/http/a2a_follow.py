"""A task's updates as it runs: the stream of ``SendStreamingMessage`` and ``SubscribeToTask``.

Both read the run's event stream through the process's relay (`api.app.run_follow`) and end
when the run ends or pauses at a gate (``input-required``: the next message decides it, and
its reply streams from there). ``SubscribeToTask`` joins a run already going: the task as it
stands first (with the answer written so far as its artifact), then what follows, without a
gap or a repeat (the event id the snapshot was taken at is where the feed starts).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from a2a.types import a2a_pb2 as a2a
from google.protobuf import json_format

from agentbus_contracts.events import ApprovalRequest, ClientEvent, Done
from api.app.access import RunRef
from api.app.run_view import describe
from api.http.a2a_rpc import UNSUPPORTED_OPERATION, RpcError
from api.http.a2a_tasks import TaskUpdates, answer_artifact, task_of

if TYPE_CHECKING:
    from api.http.a2a_uses import A2aUses


async def past_events(deps: A2aUses, run_id: str, shard: int) -> list[tuple[str, ClientEvent]]:
    """The run's events so far, with their stream ids."""
    return await deps.follower.history(run_id)


async def updates_after(
    deps: A2aUses, task: TaskUpdates, after: str
) -> AsyncIterator[a2a.StreamResponse]:
    """The updates of the events after ``after``, until the run ends or pauses."""
    async with contextlib.aclosing(deps.follower.follow(task.task_id, after=after)) as feed:
        async for event in feed:
            if event is None:
                continue
            if isinstance(event, ApprovalRequest | Done):
                for update in task.ended(event):
                    yield update
                return
            for update in task.of(event):
                yield update


async def subscribe(deps: A2aUses, ref: RunRef) -> AsyncIterator[a2a.StreamResponse]:
    """``SubscribeToTask``: the task now, then its updates; -32004 for a task that has ended
    (A2A 1.0, section 3.1.6: read it with ``GetTask``)."""
    if ref.record is not None and ref.record.is_terminal:
        raise RpcError(UNSUPPORTED_OPERATION, _ended(ref.record.status.value))
    before = await past_events(deps, ref.run_id, ref.shard)
    if any(isinstance(event, Done) for _, event in before):  # ended; the store lags
        raise RpcError(UNSUPPORTED_OPERATION, _ended("ended"))
    run = describe(ref.run_id, ref.record)
    updates = TaskUpdates(ref.run_id, run.conversation_id or "")
    gate: ApprovalRequest | None = None
    for _, event in before:  # what happened before the subscription: folded into the task
        updates.of(event)
        gate = event if isinstance(event, ApprovalRequest) else gate
    first = task_of(run, gate=gate, updated_at=ref.record.updated_at if ref.record else None)
    if run.answer is None and updates.answer_so_far:
        first.artifacts.append(answer_artifact(updates.answer_so_far))
    after = before[-1][0] if before else "0-0"

    async def stream() -> AsyncIterator[a2a.StreamResponse]:
        yield a2a.StreamResponse(task=first)
        async for update in updates_after(deps, updates, after):
            yield update

    return stream()


def _ended(status: str) -> str:
    return f"the task has ended ({status}): nothing more will stream; read it with GetTask"


async def sse(call_id: Any, updates: AsyncIterator[a2a.StreamResponse]) -> AsyncIterator[str]:
    """Each update as a server-sent event holding a JSON-RPC answer to the call."""
    async for update in updates:
        doc = {"jsonrpc": "2.0", "id": call_id, "result": json_format.MessageToDict(update)}
        yield f"data: {json.dumps(doc)}\n\n"
