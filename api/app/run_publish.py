"""Publishing a run exactly once, in its conversation's turn.

A run is published through the `RunPublishing` port (`api.app.ports`; on Redis, one Lua
script in `api.streams.run_publishing`) that records its owner and queues its intake command
for fair admission (a full tenant queue is 429 ``tenant_queue_full``), with its webhook's
registration: publishing the same run id again is a no-op. With the conversation turns
wired in, the run is admitted into its conversation first (`api.app.turn_admission`): a run
queued behind the running one is stored with its publication (`PreparedRun.stored`), to be
published when its turn comes, and holds no slot of the tenant's concurrent-run quota while
it waits. The first run of a conversation drawn for it is not admitted in SQL: its publish
writes its turn too (`PreparedRun.publish` with ``first_turn``).

A run of a caller whose key's tenant version is still to be checked (``RunToPublish.version``)
is published with the check in the same step: if the version moved, nothing is written,
what the run held is given back, and `VersionMoved` tells the starter to check the key again.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from api.app import metrics
from api.app.ask import RunToPublish, Started
from api.app.errors import ApiError, InvalidRequest, TenantQueueFull
from api.app.ports import Outcome
from api.app.turn_admission import NewTurn, admit, give_back
from bus import tracing
from bus.commands import TraceContext
from bus.store import Scope
from bus.store.turn_types import Admission, FirstTurn, TurnState

if TYPE_CHECKING:
    from api.app.ports import CancelRun, Published, RateLimits, RunPublishing
    from api.app.turn_publisher import TurnPublisher
    from bus.run_state import Multitask

__all__ = ["RunPublisher", "RunToPublish", "VersionMoved", "same_trace"]


class VersionMoved(Exception):
    """The tenant's settings version on the run's shard is not the one the caller's key was
    cached at: nothing was published. Never leaves the starter."""

    def __init__(self, tenant_id: str, shard: int, seen: int) -> None:
        super().__init__(f"tenant {tenant_id!r} is at settings version {seen} on shard {shard}")
        self.tenant_id = tenant_id
        self.shard = shard
        self.seen = seen


def same_trace(current: TraceContext | None, caller: TraceContext | None) -> bool:
    """Whether the current span is in the caller's trace already (so it is the publish span's
    parent), or the caller sent none."""
    if current is None or not current.traceparent:
        return False
    if caller is None or not caller.traceparent:
        return True
    return current.traceparent.split("-")[1] == caller.traceparent.split("-")[1]


class RunPublisher:
    """Publishes admitted runs (the starter's last step).

    Args:
        publishing: publishes runs exactly once, queued for their tenant's fair share.
        cancel: asks a run to stop (a question that interrupts or rolls it back).
        limits: the per-tenant concurrent-run quota, whose slot a run gives back when it
            waits or is not published.
        turns: publishes runs in their conversation's turn (None: every run is published
            at once).
    """

    def __init__(
        self,
        publishing: RunPublishing,
        cancel: CancelRun,
        limits: RateLimits,
        turns: TurnPublisher | None,
    ) -> None:
        self._publishing = publishing
        self._cancel = cancel
        self._limits = limits
        self._turns = turns

    async def send(self, run: RunToPublish, replay: bool, policy: Multitask) -> Started:
        """Admit the run into its conversation's turn (if turns are wired in), then publish
        it unless it waits. A run refused, or queued, gives back its quota slot; one the
        publication refused gives back its slot and its turn, one whose publish raised its
        turn.

        Raises:
            ConversationBusy, ConversationNotFound: the turn admission refused it.
            TenantQueueFull: the tenant's fair-share queue on the shard is full.
            InvalidRequest: another owner's run has this run id.
            VersionMoved: the tenant's settings version is not ``run.version``.
        """
        who, ask, run_id, settings = run.who, run.ask, run.run_id, run.settings
        conversation_id, shard = run.conversation_id, run.shard
        tracing.set_attributes({"agentbus.mode": settings.mode, "agentbus.replay": replay})
        prepared = self._publishing.prepare(run)
        admission = None
        fresh = not replay and ask.conversation_id is None and ask.run_id is None
        first_turns = None if self._turns is None else self._turns.first_turns
        if (
            first_turns is not None
            and fresh
            and self._publishing.shard_of(conversation_id) == shard
        ):
            # Both ids drawn just now, on one shard: the run's turn is written with it.
            first = FirstTurn(
                run_id, who.tenant_id, who.subject, ask.question,
                settings.timeout_s or run.deadline - time.time(), run.deadline,
            )  # fmt: skip
            published = await prepared.publish(version=run.version, first_turn=first)
            return await self._outcome(run, replay, published, None)
        if self._turns is not None:
            turn = NewTurn(
                Scope.user(who.tenant_id, who.subject),
                conversation_id,
                run_id,
                ask.question,
                prepared.stored(),
                settings.timeout_s or run.deadline - time.time(),
                settings.mode,
                ask.parent_message_id,
                # Both ids drawn by the starter just now: nothing of the run can exist yet.
                fresh=fresh,
                first=None if first_turns is None else await first_turns.read(conversation_id),
            )
            try:
                admission = await admit(self._turns, turn, policy, self._cancel)
            except ApiError:
                await self._limits.release(who.tenant_id, run_id)
                raise
            if admission.state == TurnState.QUEUED:
                await self._limits.release(who.tenant_id, run_id)  # it holds no slot waiting
                return Started(
                    run_id,
                    conversation_id,
                    shard,
                    replayed=replay or admission.replayed,
                    queued=True,
                    ahead=admission.ahead,
                )
        try:
            published = await prepared.publish(version=run.version)
        except BaseException:
            if admission is not None and not admission.replayed:
                await give_back(self._turns, who.scope, run_id)
            raise
        return await self._outcome(run, replay, published, admission)

    async def _outcome(
        self, run: RunToPublish, replay: bool, published: Published, admission: Admission | None
    ) -> Started:
        """What the publication did, as the caller's `Started` or an error; a run it refused
        gives back what it held."""
        who, run_id, shard = run.who, run.run_id, run.shard
        outcome = published.outcome
        refused = outcome not in (Outcome.PUBLISHED, Outcome.REPEATED)
        if refused:
            await self._limits.release(who.tenant_id, run_id)
            if admission is not None and not admission.replayed:
                await give_back(self._turns, who.scope, run_id)
        if outcome == Outcome.VERSION_MOVED:
            raise VersionMoved(who.tenant_id, shard, published.version)
        if outcome == Outcome.QUEUE_FULL:
            raise TenantQueueFull(
                f"tenant {who.tenant_id!r} has {published.waiting} runs waiting on this shard",
                retry_after=published.retry_after_s,
            )
        if refused:
            raise InvalidRequest(f"run id {run_id!r} is taken", field="run_id")
        if outcome == Outcome.PUBLISHED:
            metrics.RUNS_BY_MODE.labels(run.settings.mode).inc()
        return Started(
            run_id, run.conversation_id, shard, replayed=replay or outcome == Outcome.REPEATED
        )
