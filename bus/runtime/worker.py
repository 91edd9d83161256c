"""The worker runtime: one role's consumer with exactly-once run progress.

FastStream's stream subscriber acks nothing on failure, never reclaims a dead
consumer's messages and handles ~2,200 messages/s here, below the hop target, so the
read/claim/commit loop is written directly against the broker's Redis connection
(`bus.runtime.consumer` reads, reclaims and dead-letters; this module runs the steps):

* a step already done is acked and skipped; marking it done, publishing the next
  commands and acking happen in one Lua script (`bus.runtime.commit`);
* in-flight steps keep their own claims fresh (``XCLAIM ... JUSTID``, only while this
  consumer still owns them), so nobody reclaims a step that is still running, and the
  leases they hold (`bus.runtime.leases`) alive on the same beat; a step another consumer
  reclaimed while this process stalled is stopped here at the next beat;
* the run's deadline cuts a step under way: the run ends ``timeout`` with an ``error``
  event, and whatever the step had streamed is not part of any answer;
* a redelivered step first emits ``step_retry``; after ``max_deliveries`` the entry
  goes to the dead-letter stream and its run ends with an ``error`` event.

A step of a user being erased (`bus.fence`) commits nothing but its ack.

A role whose steps run after their run ended (``after_run``: the memory role) never ends
a run nor writes to its events: a cancel requested late does not stop its step, an expired
one is dropped, a retried one emits no ``step_retry``, a dead one is dead-lettered without
an ``error`` event, and none is counted as a run's end.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING, Any

import structlog

from bus import epochs, keys, tracing, wire
from bus.commands import Command
from bus.errors import MessageInvalid
from bus.events import ErrorEvent, FinalStatus, StepRetry
from bus.runtime import metrics
from bus.runtime.commit import CANCELLED, COMMITTED, DUPLICATE, ERASED, Committer, prepare
from bus.runtime.consumer import Entry, StreamConsumer
from bus.runtime.context import StepContext, StepResult
from bus.runtime.groups import ensure_group, ensure_role_groups
from bus.runtime.handoff import handoff_for
from bus.runtime.leases import Leases
from bus.runtime.observe import count_run_end, step_attributes
from bus.runtime.scripts import KEEP_CLAIMS
from bus.typed_redis import lua

if TYPE_CHECKING:
    from redis.asyncio import Redis

    from bus.budget import Charge
    from bus.fence import Fence
    from bus.settings import BusSettings

Handler = Callable[[StepContext, Command], Awaitable[StepResult]]
RunEndHook = Callable[[Command, FinalStatus, StepResult], Awaitable[None]]
"""Called as a run ends, before its last step is committed: the command, the final status
and that step's result (its last events, such as the ``error`` and ``done`` a failure ends
with, and the conversation turn its handler ended, if any)."""
ErasedHook = Callable[[Command], Awaitable[None]]
"""Called when a step's user is being erased (`bus.fence`): give back what its run held,
writing nothing of the user's."""

log = structlog.get_logger("bus.worker")
_DATA = wire.DATA_FIELD.encode()


class Worker(StreamConsumer):
    """Consumes one role's streams on every shard and runs its handler per step.

    With ``lane``, it reads the role's lane streams instead (`keys.role_stream`).
    ``duties`` are loops run beside the reads while the worker runs (the researcher's
    fair-share tick, `bus.fairshare`). With ``watch_epochs``, each step runs with the
    epochs read behind the read that delivered it (`bus.epochs`).
    """

    def __init__(
        self,
        role: keys.Role,
        handler: Handler,
        redis: Redis,
        settings: BusSettings,
        *,
        concurrency: int = 1,
        consumer: str | None = None,
        on_run_end: RunEndHook | None = None,
        lane: str | None = None,
        duties: Sequence[Callable[[], Coroutine[Any, Any, None]]] = (),
        after_run: bool = False,
        fence: Fence | None = None,
        on_erased: ErasedHook | None = None,
        watch_epochs: bool = False,
    ) -> None:
        super().__init__(
            role, redis, settings, consumer=consumer, lane=lane, watch_epochs=watch_epochs
        )
        self._on_erased = on_erased
        self.after_run = after_run
        self.handler = handler
        self._duties = list(duties)
        self.concurrency = max(1, concurrency)
        self._on_run_end = on_run_end
        self._inflight: dict[tuple[str, bytes], asyncio.Task[None]] = {}
        #: The in-flight entries whose handler is running (the part a lost claim stops).
        self._in_handler: set[tuple[str, bytes]] = set()
        self._committer = Committer(
            redis, settings, self.group, check_cancel=not after_run, fence=fence
        )
        #: Leases this worker's steps hold (`bus.runtime.leases`), refreshed by the heartbeat.
        self.leases = Leases(redis, self.consumer, settings.claim_idle_ms)
        self._keep_claims = lua(redis, KEEP_CLAIMS)  # the heartbeat's, for owned entries
        self._owner = (self.group, self.consumer)
        self._handoff = handoff_for(redis)

    @property
    def busy(self) -> bool:
        """True while a step is in flight or the last read delivered something."""
        return bool(self._inflight) or not self.read_empty

    async def ensure_groups(self) -> None:
        """Create this role's group on every shard stream (idempotent).

        Also every other role's group (a command this worker publishes never lands in a
        stream no group reads), and the recorder's group from the start of its stream, so
        the ledger records this worker's steps commit wait for a recorder even if none has
        run yet.
        """
        await super().ensure_groups()
        await ensure_role_groups(self.redis, self.settings.shards)
        recorder = keys.Role.RECORDER
        for shard in range(self.settings.shards):
            stream = keys.role_stream(recorder, shard)
            await ensure_group(self.redis, stream, keys.group_name(recorder), from_start=True)

    def _room(self) -> int:
        return self.concurrency - len(self._inflight)

    def _background(self) -> list[Coroutine[Any, Any, None]]:
        duties = [duty() for duty in self._duties]  # e.g. the fair-share tick
        return [self._heartbeat_loop(), *duties, *super()._background()]

    async def _drain(self) -> None:
        tasks = list(self._inflight.values())
        if not tasks:
            return
        _, pending = await asyncio.wait(tasks, timeout=self.settings.drain_timeout_s)
        for task in pending:  # left pending in Redis: another replica reclaims them
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)

    async def _take(self, entries: list[Entry]) -> None:
        """Decode a batch of entries and start their steps (redeliveries checked first)."""
        ready: list[tuple[Entry, Command]] = []
        for entry in entries:
            if (entry.stream, entry.id) in self._inflight:
                continue
            try:
                ready.append((entry, self._decode(entry)))
            except MessageInvalid as e:
                self._spawn(entry, self._dead_step(entry, None, "unparseable", str(e)))
        if not ready:
            return
        # A redelivered step may be done already, or its run cancelled: one pipeline for
        # the batch says which, so the handler does not run again. A first delivery needs
        # no such read: the commit script skips a done step and refuses a cancelled run.
        again = [cmd for entry, cmd in ready if entry.delivery > 1]
        flags: dict[str, tuple[bool, bool]] = {}
        if again:
            async with self.redis.pipeline(transaction=False) as pipe:
                for cmd in again:
                    pipe.sismember(keys.run_steps(cmd.run_id, cmd.shard), cmd.step_id)
                    pipe.exists(keys.run_cancel(cmd.run_id, cmd.shard))
                replies = await pipe.execute()
            for i, cmd in enumerate(again):
                flags[cmd.step_id] = (bool(replies[2 * i]), bool(replies[2 * i + 1]))
        for entry, cmd in ready:
            done, cancelled = (
                flags.get(cmd.step_id, (False, False)) if entry.delivery > 1 else (False, False)
            )
            self._spawn(entry, self._process(entry, cmd, done, cancelled))

    def _decode(self, entry: Entry) -> Command:
        # A command this process published is taken as it was built (`bus.runtime.handoff`).
        data = entry.fields.get(_DATA)
        command = None if data is None else self._handoff.take(data)
        return command if command is not None else wire.decode_command(entry.fields)

    def _spawn(self, entry: Entry, step: Coroutine[Any, Any, None]) -> None:
        key = (entry.stream, entry.id)
        task = asyncio.create_task(step)
        self._inflight[key] = task
        task.add_done_callback(partial(self._done, key))  # no lambda frame per step

    def _done(self, key: tuple[str, bytes], _task: asyncio.Task[None]) -> None:
        self._inflight.pop(key, None)
        self._room_freed.set()

    async def _process(self, entry: Entry, command: Command, done: bool, cancelled: bool) -> None:
        started = time.perf_counter()
        if entry.seen is not None:  # the step's own task: set for this step alone
            epochs.enter(entry.seen)
        structlog.contextvars.bind_contextvars(
            run_id=command.run_id,
            tenant_id=command.tenant_id,
            role=str(self.role),
            step=command.step_id,
        )
        if tracing.ENABLED:
            outcome = await self._traced(entry, command, done, cancelled)
        else:
            outcome = await self._outcome(entry, command, done, cancelled)
        metrics.child(metrics.MESSAGES, str(self.role), outcome).inc()
        metrics.child(metrics.STEP_SECONDS, str(self.role)).observe(time.perf_counter() - started)

    async def _traced(self, entry: Entry, command: Command, done: bool, cancelled: bool) -> str:
        """The step inside its span, a child of the span of the step that published it."""
        with tracing.span(
            f"step {self.role}",
            step_attributes(command, self.role, entry.delivery),
            parent=command.trace,
            kind="consumer",
        ):
            outcome = await self._outcome(entry, command, done, cancelled)
            tracing.set_attributes({"agentbus.step.outcome": outcome})
            if outcome in ("dead_lettered", "runtime_error", "lost_claim"):
                tracing.set_error(outcome)
        return outcome

    async def _outcome(self, entry: Entry, command: Command, done: bool, cancelled: bool) -> str:
        try:
            if done:
                await self.redis.xack(entry.stream, self.group, entry.id)
                return "duplicate"
            if cancelled and not self.after_run:
                await self._end(entry, command, "cancelled", "cancel requested")
                return "cancelled"
            return await self._run_step(entry, command)
        except Exception:
            log.exception("step crashed in the runtime; left pending for reclaim")
            return "runtime_error"

    async def _run_step(self, entry: Entry, command: Command) -> str:
        if entry.delivery > self.settings.max_deliveries:
            await self._dead_step(entry, command, "max_deliveries", "delivered too often")
            return "dead_lettered"
        if time.time() > command.deadline:
            if self.after_run:  # its run ended long ago: nothing to end, nothing to do
                log.warning("step expired before it ran; dropped")
                await self.redis.xack(entry.stream, self.group, entry.id)
                return "expired"
            await self._end(entry, command, "timeout", "the run passed its deadline")
            return "expired"
        ctx = StepContext(command, entry.delivery, self.redis, self.settings, self.leases)
        running = (entry.stream, entry.id)
        pending = metrics.open_step()
        while True:
            if entry.delivery > 1:
                tracing.add_event("step_retry", {"agentbus.delivery": entry.delivery})
                if not self.after_run:  # an ended run's clients have read their last event
                    await ctx.emit(self._retry_event(command, entry.delivery))
            pending.clear()  # a failed attempt's work is not counted
            # The run's deadline also cuts a step under way (a model call that hangs).
            cut = asyncio.timeout(command.deadline - time.time())
            try:
                async with cut:
                    # Only the handler's run is stopped if the claim is lost (`_lost_claim`):
                    # what follows it (commit, ack, end) settles the entry either way.
                    self._in_handler.add(running)
                    try:
                        result = await self.handler(ctx, command)
                    finally:
                        self._in_handler.discard(running)
                prepared = prepare(command, result, self.settings)
                break
            except Exception as e:
                if isinstance(e, TimeoutError) and cut.expired() and self.after_run:
                    log.warning("step passed its deadline; dropped")
                    await self.redis.xack(entry.stream, self.group, entry.id)
                    return "expired"
                if isinstance(e, TimeoutError) and cut.expired():
                    message = (
                        f"the run passed its deadline during the {self.role} step; "
                        "what it had streamed is kept as a partial answer"
                    )
                    await self._end(entry, command, "timeout", message)
                    return "expired"
                # An error that says it cannot succeed on a retry (a 401 from the model
                # endpoint, say) is dead-lettered at once instead of burning deliveries.
                delivery = entry.delivery
                if delivery >= self.settings.max_deliveries or not getattr(e, "retryable", True):
                    log.exception("step failed for the last time", delivery=delivery)
                    await self._dead_step(entry, command, "failed", repr(e))
                    return "dead_lettered"
                log.warning("step failed, retrying", delivery=delivery, error=repr(e))
                tracing.add_event("step_failed", {"agentbus.delivery": delivery, "error": repr(e)})
                await asyncio.sleep(self.settings.retry_backoff_ms / 1000 * 2 ** (delivery - 1))
                next_delivery = await self._claim_again(entry)
                if next_delivery is None:
                    return "lost_claim"
                entry = replace(entry, delivery=next_delivery)
                ctx.delivery = next_delivery
        if prepared.finished:
            # Recorded before the commit, so a client that sees `done` finds the store
            # updated too; the hook is idempotent, a redelivery records the same status.
            await self._run_ended(command, prepared.finished, result)
        applied = await self._committer.commit(entry, command, prepared)
        if applied == CANCELLED:  # cancelled while the step ran: only its spending is kept
            await self._end(entry, command, "cancelled", "cancel requested", prepared.charge)
            return "cancelled"
        if applied == DUPLICATE:
            return "duplicate"
        if applied == ERASED:
            return await self._erased(entry, command)
        if prepared.finished:
            count_run_end(command, prepared.finished)
        metrics.apply(pending)
        return "ok" if entry.delivery == 1 else "retried"

    async def _erased(self, entry: Entry, command: Command) -> str:
        """Its user is being erased: nothing of the step is kept; what the run held (its
        concurrent-run slot, its fair share) is given back, then the entry is acked."""
        if self._on_erased is not None and not self.after_run:
            try:
                await self._on_erased(command)
            except Exception:
                log.exception("erased-run hook failed")
        await self.redis.xack(entry.stream, self.group, entry.id)
        return "erased"

    def _retry_event(self, command: Command, delivery: int) -> StepRetry:
        return StepRetry(
            run_id=command.run_id, step_id=command.step_id, agent=str(self.role), delivery=delivery
        )

    async def _end(
        self,
        entry: Entry,
        command: Command,
        status: FinalStatus,
        message: str,
        charge: Charge | None = None,
    ) -> None:
        ending = replace(StepResult.ending(command, status, message), charge=charge)
        prepared = prepare(command, ending, self.settings)
        await self._run_ended(command, status, ending)
        pending = metrics.open_step()
        applied = await self._committer.commit(entry, command, prepared)
        if applied == COMMITTED:
            count_run_end(command, status)
            metrics.apply(pending)
        elif applied == ERASED:
            await self._erased(entry, command)

    async def _run_ended(self, command: Command, status: FinalStatus, ending: StepResult) -> None:
        # The run's end is already committed in Redis; a failing hook (say, the store
        # is down) is logged, not retried, so it cannot re-run a finished step.
        if self._on_run_end is None:
            return
        try:
            await self._on_run_end(command, status, ending)
        except Exception:
            log.exception("run-end hook failed", status=status)

    async def _claim_again(self, entry: Entry) -> int | None:
        """Re-claim our own entry for a retry, counting one more delivery."""
        claimed = await self.redis.xclaim(entry.stream, self.group, self.consumer, 0, [entry.id])
        if not claimed:
            return None
        info = await self.redis.xpending_range(
            entry.stream,
            self.group,
            min=entry.id,
            max=entry.id,
            count=1,
            consumername=self.consumer,
        )
        return int(info[0]["times_delivered"]) if info else None

    async def _dead_step(
        self, entry: Entry, command: Command | None, reason: str, error: str
    ) -> None:
        """Dead-letter a step's entry and end its run (known even if the entry is garbled)."""
        run_id, tenant = (
            (command.run_id, command.tenant_id) if command else wire.loose_run_id(entry.fields)
        )
        if command and self.after_run:
            await self._dead(entry, reason, error)  # its run has ended: no error event
            return
        if command:
            why = f"step failed after {entry.delivery} deliveries: {error[:300]}"
            failed = ErrorEvent(
                run_id=command.run_id, step_id=command.step_id, code="dead_letter", message=why
            )
            await self._run_ended(command, "error", StepResult(events=[failed], finished="error"))
            pending = metrics.open_step()
            count_run_end(command, "error")
            metrics.apply(pending)
        await self._dead(entry, reason, error, run_id, tenant)

    async def _before_reclaim(self) -> None:
        # After a stall past the claim idle time (a blocked loop, a paused process) this
        # pass and the heartbeat wake together. Were the pass first, it would claim this
        # worker's own steps in flight: a claim that starts nothing (they are running
        # here) but counts one more delivery toward the dead-letter limit, which counts
        # the attempts at a step. So the steps' claims are kept fresh first.
        await self._keep_own_claims()

    async def _keep_own_claims(self) -> None:
        """Refresh the claims of the steps in flight (``XCLAIM ... JUSTID``: no delivery is
        counted); stop any step another consumer has taken over meanwhile."""
        by_stream: dict[str, list[bytes]] = {}
        for stream, entry_id in list(self._inflight):
            by_stream.setdefault(stream, []).append(entry_id)
        for stream, ids in by_stream.items():
            try:
                lost = await self._keep_claims(keys=[stream], args=[*self._owner, *ids])
            except Exception as e:  # the loops must outlive any one failure
                log.warning("heartbeat failed", error=repr(e))
                continue
            for entry_id in lost:
                self._lost_claim(stream, entry_id)

    def _lost_claim(self, stream: str, entry_id: bytes | str) -> None:
        """Another consumer reclaimed this step while this process stalled (or finished
        it): stop running it here, so its tokens and its effects come from one run only."""
        raw = entry_id if isinstance(entry_id, bytes) else entry_id.encode()
        task = self._inflight.get((stream, raw))
        # Not pending to us after the handler returned: this step's own commit acked it.
        if task is not None and (stream, raw) in self._in_handler:
            log.warning("claim lost: another consumer runs this step", entry=raw.decode())
            metrics.MESSAGES.labels(str(self.role), "lost_claim").inc()
            task.cancel()

    async def _heartbeat_loop(self) -> None:
        """Keep in-flight steps' claims fresh so nobody reclaims a step still running, and
        the leases those steps hold alive on the same beat."""
        interval = self.settings.heartbeat_interval_s
        while True:
            await asyncio.sleep(interval)
            await self._keep_own_claims()
            try:
                lost = await self.leases.refresh()
            except Exception as e:
                log.warning("lease heartbeat failed", error=repr(e))
                continue
            for key in lost:  # this process stalled past its lease; another may act on it
                log.warning("lease lost", key=key)
