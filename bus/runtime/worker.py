"""The worker runtime: one role's consumer with exactly-once run progress.

FastStream's stream subscriber acks nothing on failure, never reclaims a dead
consumer's messages and handles ~2,200 messages/s here, below the hop target, so the
read/claim/commit loop is written directly against the broker's Redis connection:

* groups are created at start-up (``XGROUP CREATE ... $ MKSTREAM``) and re-created
  if the stream vanishes (NOGROUP);
* a step already done is acked and skipped; marking it done, publishing the next
  commands and acking happen in one Lua script (``scripts.COMMIT``);
* idle pending entries of dead consumers are taken over with XAUTOCLAIM, while
  in-flight steps keep their own claims fresh (``XCLAIM ... JUSTID``);
* a redelivered step first emits ``step_retry``; after ``max_deliveries`` the entry
  goes to the dead-letter stream and its run ends with an ``error`` event.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import socket
import time
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import structlog
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import NoScriptError, ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError

from bus import keys, wire
from bus.commands import Command
from bus.errors import MessageInvalid, MessageTooLarge
from bus.events import RunStatus, StepRetry
from bus.runtime import metrics
from bus.runtime.context import StepContext, StepResult
from bus.runtime.deadletter import DeadLetter, dead_letter
from bus.runtime.groups import claim_idle, ensure_group
from bus.runtime.mux import mux_for
from bus.runtime.scripts import COMMIT, COMMIT_SHA

if TYPE_CHECKING:
    from redis.asyncio import Redis
    from redis.typing import StreamIdT

    from bus.settings import Settings

Handler = Callable[[StepContext, Command], Awaitable[StepResult]]
RunEndHook = Callable[[Command, RunStatus], Awaitable[None]]

log = structlog.get_logger("bus.worker")


# What the commit script returns.
_DUPLICATE, _COMMITTED, _CANCELLED = 0, 1, 2


@dataclass(frozen=True, slots=True)
class _Prepared:
    """A step's effects, encoded and checked, ready for the commit script."""

    outputs: list[tuple[str, str]]
    events: list[str]
    finished: RunStatus | None
    replies: list[tuple[str, str]]
    join: tuple[list[str], list[str | int]]


def _stream_of(command: Command) -> str:
    return keys.role_stream(command.role, command.shard)


def consumer_name() -> str:
    """A consumer name unique to this process (host, pid, random suffix)."""
    return f"{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(3)}"


class Worker:
    """Consumes one role's streams on every shard and runs its handler per step.

    With ``lane``, it reads the role's lane streams instead (`keys.role_stream`).
    """

    def __init__(
        self,
        role: keys.Role,
        handler: Handler,
        redis: Redis,
        settings: Settings,
        *,
        concurrency: int = 1,
        consumer: str | None = None,
        on_run_end: RunEndHook | None = None,
        lane: str | None = None,
    ) -> None:
        self.role = role
        self.handler = handler
        self.redis = redis
        self.settings = settings
        self.concurrency = max(1, concurrency)
        self.consumer = consumer or consumer_name()
        self.group = keys.group_name(role)
        self.streams = [keys.role_stream(role, k, lane) for k in range(settings.shards)]
        self._shard_of_stream = {s: k for k, s in enumerate(self.streams)}
        self._on_run_end = on_run_end
        self._inflight: dict[tuple[str, bytes], asyncio.Task[None]] = {}
        self._slot_freed = asyncio.Event()
        self._stopping = asyncio.Event()
        self._mux = mux_for(redis)
        self._reclaim_cursor = dict.fromkeys(self.streams, "0-0")
        self.read_empty = False  # the last read returned nothing

    @property
    def busy(self) -> bool:
        """True while a step is in flight or the last read delivered something."""
        return bool(self._inflight) or not self.read_empty

    async def ensure_groups(self) -> None:
        """Create this role's group on every shard stream (idempotent).

        Also the recorder's group, from the start of its stream, so the ledger records this
        worker's steps commit wait for a recorder even if none has run yet.
        """
        for stream in self.streams:
            await ensure_group(self.redis, stream, self.group)
        recorder = keys.Role.RECORDER
        for shard in range(self.settings.shards):
            stream = keys.role_stream(recorder, shard)
            await ensure_group(self.redis, stream, keys.group_name(recorder), from_start=True)

    def stop(self) -> None:
        """Stop reading; in-flight steps finish (``run`` returns after the drain)."""
        self._stopping.set()
        self._slot_freed.set()

    async def run(self) -> None:
        """Consume until ``stop()``, then drain in-flight steps and return."""
        await self.ensure_groups()
        background = [
            asyncio.create_task(self._heartbeat_loop(), name=f"{self.role}-heartbeat"),
            asyncio.create_task(self._reclaim_loop(), name=f"{self.role}-reclaim"),
        ]
        try:
            await self._read_loop()
            await self._drain()
        finally:
            for task in background:
                task.cancel()
            await asyncio.gather(*background, return_exceptions=True)

    async def _drain(self) -> None:
        tasks = list(self._inflight.values())
        if not tasks:
            return
        _, pending = await asyncio.wait(tasks, timeout=self.settings.drain_timeout_s)
        for task in pending:  # left pending in Redis: another replica reclaims them
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)

    async def _read_loop(self) -> None:
        streams = dict.fromkeys(self.streams, ">")
        while not self._stopping.is_set():
            free = self.concurrency - len(self._inflight)
            if free <= 0:
                self._slot_freed.clear()
                await self._slot_freed.wait()
                continue
            try:
                resp = await self.redis.xreadgroup(
                    self.group,
                    self.consumer,
                    streams,  # type: ignore[arg-type]
                    count=free,
                    block=self.settings.read_block_ms,
                )
            except ResponseError as e:
                # NOGROUP: the stream or group was deleted; UNBLOCKED: deleted while we
                # were blocked on it. Either way, re-create and read again.
                if "NOGROUP" not in str(e) and "UNBLOCKED" not in str(e):
                    raise
                log.warning("group missing, re-creating", role=self.role, error=str(e))
                await self.ensure_groups()
                continue
            except (RedisConnectionError, RedisTimeoutError) as e:
                log.warning("broker unreachable, retrying", role=self.role, error=str(e))
                await asyncio.sleep(1.0)
                continue
            self.read_empty = not resp
            if resp:
                items = [(sb.decode(), eid, f, 1) for sb, entries in resp for eid, f in entries]
                try:
                    await self._admit(items)
                except (RedisConnectionError, RedisTimeoutError) as e:
                    # The entries stay pending to us; the reclaim loop picks them up later.
                    log.warning("broker unreachable while admitting steps", error=str(e))
                    await asyncio.sleep(1.0)
                # Let the new steps start before the next blocking read is sent: that read
                # then goes out while they wait on their first round trip, not ahead of them.
                await asyncio.sleep(0)

    async def _admit(self, items: list[tuple[str, bytes, dict[bytes, bytes], int]]) -> None:
        """Decode a batch of entries and start their steps (redeliveries checked first)."""
        ready: list[tuple[str, bytes, dict[bytes, bytes], int, Command]] = []
        for stream, entry_id, fields, delivery in items:
            if (stream, entry_id) in self._inflight:
                continue
            try:
                ready.append((stream, entry_id, fields, delivery, wire.decode_command(fields)))
            except MessageInvalid as e:
                dead = self._dead(stream, entry_id, fields, None, "unparseable", str(e), delivery)
                self._spawn(stream, entry_id, dead)
        if not ready:
            return
        # A redelivered step may be done already, or its run cancelled: one pipeline for
        # the batch says which, so the handler does not run again. A first delivery needs
        # no such read: the commit script skips a done step and refuses a cancelled run.
        again = [cmd for _, _, _, delivery, cmd in ready if delivery > 1]
        flags: dict[str, tuple[bool, bool]] = {}
        if again:
            async with self.redis.pipeline(transaction=False) as pipe:
                for cmd in again:
                    pipe.sismember(keys.run_steps(cmd.run_id, cmd.shard), cmd.step_id)
                    pipe.exists(keys.run_cancel(cmd.run_id, cmd.shard))
                replies = await pipe.execute()
            for i, cmd in enumerate(again):
                flags[cmd.step_id] = (bool(replies[2 * i]), bool(replies[2 * i + 1]))
        for stream, entry_id, fields, delivery, cmd in ready:
            done, cancelled = (
                flags.get(cmd.step_id, (False, False)) if delivery > 1 else (False, False)
            )
            step = self._process(stream, entry_id, fields, delivery, cmd, done, cancelled)
            self._spawn(stream, entry_id, step)

    def _spawn(self, stream: str, entry_id: bytes, step: Coroutine[Any, Any, None]) -> None:
        key = (stream, entry_id)
        task = asyncio.create_task(step)
        self._inflight[key] = task
        task.add_done_callback(lambda _t: self._done(key))

    def _done(self, key: tuple[str, bytes]) -> None:
        self._inflight.pop(key, None)
        self._slot_freed.set()

    async def _process(
        self,
        stream: str,
        entry_id: bytes,
        fields: dict[bytes, bytes],
        delivery: int,
        command: Command,
        done: bool,
        cancelled: bool,
    ) -> None:
        started = time.perf_counter()
        structlog.contextvars.bind_contextvars(
            run_id=command.run_id,
            tenant_id=command.tenant_id,
            role=str(self.role),
            step=command.step_id,
        )
        try:
            if done:
                await self.redis.xack(stream, self.group, entry_id)
                outcome = "duplicate"
            elif cancelled:
                await self._end(stream, entry_id, command, "cancelled", "cancel requested")
                outcome = "cancelled"
            else:
                outcome = await self._run_step(stream, entry_id, fields, command, delivery)
        except Exception:
            log.exception("step crashed in the runtime; left pending for reclaim")
            outcome = "runtime_error"
        metrics.MESSAGES.labels(str(self.role), outcome).inc()
        metrics.STEP_SECONDS.labels(str(self.role)).observe(time.perf_counter() - started)

    async def _run_step(
        self,
        stream: str,
        entry_id: bytes,
        fields: dict[bytes, bytes],
        command: Command,
        delivery: int,
    ) -> str:
        if delivery > self.settings.max_deliveries:
            await self._dead(
                stream, entry_id, fields, command, "max_deliveries", "delivered too often", delivery
            )
            return "dead_lettered"
        if time.time() > command.deadline:
            await self._end(stream, entry_id, command, "timeout", "the run passed its deadline")
            return "expired"
        ctx = StepContext(command, delivery, self.redis, self.settings)
        while True:
            if delivery > 1:
                await ctx.emit(self._retry_event(command, delivery))
            try:
                prepared = self._prepare(command, await self.handler(ctx, command))
                break
            except Exception as e:
                # An error that says it cannot succeed on a retry (a 401 from the model
                # endpoint, say) is dead-lettered at once instead of burning deliveries.
                if delivery >= self.settings.max_deliveries or not getattr(e, "retryable", True):
                    log.exception("step failed for the last time", delivery=delivery)
                    await self._dead(stream, entry_id, fields, command, "failed", repr(e), delivery)
                    return "dead_lettered"
                log.warning("step failed, retrying", delivery=delivery, error=repr(e))
                await asyncio.sleep(self.settings.retry_backoff_ms / 1000 * 2 ** (delivery - 1))
                next_delivery = await self._claim_again(stream, entry_id)
                if next_delivery is None:
                    return "lost_claim"
                delivery = ctx.delivery = next_delivery
        if prepared.finished:
            # Recorded before the commit, so a client that sees `done` finds the store
            # updated too; the hook is idempotent, a redelivery records the same status.
            await self._run_ended(command, prepared.finished)
        applied = await self._apply(stream, entry_id, command, prepared)
        if applied == _CANCELLED:  # cancelled while the step ran: nothing of it is kept
            await self._end(stream, entry_id, command, "cancelled", "cancel requested")
            return "cancelled"
        if applied == _DUPLICATE:
            return "duplicate"
        return "ok" if delivery == 1 else "retried"

    def _retry_event(self, command: Command, delivery: int) -> StepRetry:
        return StepRetry(
            run_id=command.run_id, step_id=command.step_id, agent=str(self.role), delivery=delivery
        )

    def _prepare(self, command: Command, result: StepResult) -> _Prepared:
        """Encode and check a step's effects (a bad result fails the step, not the commit)."""
        outputs: list[tuple[str, str]] = []
        for c in result.next:
            data = wire.encode(c)
            if c.shard != command.shard:
                raise ValueError("a run's commands stay on its shard")
            if len(data) > self.settings.max_message_bytes:
                raise MessageTooLarge(
                    f"{c.role} command is {len(data)} bytes, over the "
                    f"{self.settings.max_message_bytes}-byte budget"
                )
            outputs.append((keys.role_stream(c.role, c.shard), data))
        ledger = keys.role_stream(keys.Role.RECORDER, command.shard)
        outputs += [(ledger, wire.encode(r)) for r in result.records]
        events = [wire.encode(e) for e in result.events]
        join: tuple[list[str], list[str | int]] = ([], [0])
        if result.join is not None:
            j = result.join
            then = wire.encode(j.then)
            join = (
                [keys.run_join(command.run_id, command.shard, j.name), _stream_of(j.then)],
                [1, j.member, j.value, j.expected, then],
            )
        return _Prepared(outputs, events, result.finished, list(result.replies), join)

    async def _apply(self, stream: str, entry_id: bytes, command: Command, prep: _Prepared) -> int:
        """Run the commit script: ``_COMMITTED``, ``_DUPLICATE`` (another delivery already
        committed) or ``_CANCELLED`` (the run was cancelled; nothing was changed)."""
        shard, s = command.shard, self.settings
        for reply_stream, data in prep.replies:
            # Outside the run's hash tag, so not in the script: at least once, before it.
            await self.redis.xadd(reply_stream, {wire.DATA_FIELD: data}, maxlen=s.stream_maxlen)
        expire = s.events_ttl_s if prep.finished else 0
        done = await self._run_commit(
            [
                stream,
                keys.run_steps(command.run_id, shard),
                keys.run_events(command.run_id, shard),
                keys.run_cancel(command.run_id, shard),
                *(o[0] for o in prep.outputs),
                *prep.join[0],
            ],
            [
                self.group,
                entry_id,
                command.step_id,
                s.run_ttl_s,
                len(prep.outputs),
                s.stream_maxlen,
                s.events_maxlen,
                expire,
                len(prep.events),
                0 if prep.finished else 1,  # a step that ends the run ends it regardless
                *(o[1] for o in prep.outputs),
                *prep.events,
                *prep.join[1],
            ],
        )
        return int(done)

    async def _run_commit(self, keys: list[str], args: list[Any]) -> Any:
        """The commit script on the process's pipelined connection (`bus.runtime.mux`)."""
        try:
            return await self._mux.execute("EVALSHA", COMMIT_SHA, len(keys), *keys, *args)
        except NoScriptError:  # a restarted or flushed server: load it, then once more
            await self.redis.script_load(COMMIT)
            return await self._mux.execute("EVALSHA", COMMIT_SHA, len(keys), *keys, *args)

    async def _end(
        self, stream: str, entry_id: bytes, command: Command, status: RunStatus, message: str
    ) -> None:
        prepared = self._prepare(command, StepResult.ending(command, status, message))
        await self._run_ended(command, status)
        await self._apply(stream, entry_id, command, prepared)

    async def _run_ended(self, command: Command, status: RunStatus) -> None:
        # The run's end is already committed in Redis; a failing hook (say, the store
        # is down) is logged, not retried, so it cannot re-run a finished step.
        if self._on_run_end is None:
            return
        try:
            await self._on_run_end(command, status)
        except Exception:
            log.exception("run-end hook failed", status=status)

    async def _claim_again(self, stream: str, entry_id: bytes) -> int | None:
        """Re-claim our own entry for a retry, counting one more delivery."""
        claimed = await self.redis.xclaim(stream, self.group, self.consumer, 0, [entry_id])
        if not claimed:
            return None
        info = await self.redis.xpending_range(
            stream, self.group, min=entry_id, max=entry_id, count=1, consumername=self.consumer
        )
        return int(info[0]["times_delivered"]) if info else None

    async def _dead(
        self,
        stream: str,
        entry_id: bytes,
        fields: dict[bytes, bytes],
        command: Command | None,
        reason: str,
        error: str,
        delivery: int,
    ) -> None:
        run_id, tenant = (
            (command.run_id, command.tenant_id) if command else wire.loose_run_id(fields)
        )
        letter = DeadLetter(
            stream=stream,
            entry_id=entry_id.decode(),
            group=self.group,
            role=str(self.role),
            reason=reason,
            error=error[:2000],
            deliveries=delivery,
            run_id=run_id,
            tenant_id=tenant,
            data=fields.get(wire.DATA_FIELD.encode(), b"").decode(errors="replace"),
        )
        shard = self._shard_of_stream.get(stream, 0)
        if command:
            await self._run_ended(command, "error")
        if await dead_letter(self.redis, letter, shard, self.settings):
            log.error("dead-lettered", reason=reason, error=error[:200], stream=stream)
            metrics.DEAD_LETTERS.labels(str(self.role), reason).inc()

    async def _heartbeat_loop(self) -> None:
        """Keep in-flight steps' claims fresh so nobody reclaims a step still running."""
        interval = self.settings.heartbeat_interval_s
        while True:
            await asyncio.sleep(interval)
            by_stream: dict[str, list[StreamIdT]] = {}
            for stream, entry_id in list(self._inflight):
                by_stream.setdefault(stream, []).append(entry_id)
            for stream, ids in by_stream.items():
                try:
                    await self.redis.xclaim(stream, self.group, self.consumer, 0, ids, justid=True)
                except Exception as e:  # the loop must outlive any one failure
                    log.warning("heartbeat failed", error=repr(e))

    async def _reclaim_loop(self) -> None:
        """Take over entries left pending by consumers that went idle (crashed)."""
        interval = max(0.05, min(5.0, self.settings.claim_idle_ms / 2000))
        while True:
            await asyncio.sleep(interval)
            for stream in self.streams:
                free = self.concurrency - len(self._inflight)
                if free <= 0 or self._stopping.is_set():
                    break
                try:
                    await self._reclaim(stream, free)
                except Exception as e:  # the loop must outlive any one failure
                    log.warning("reclaim failed", stream=stream, error=repr(e))

    async def _reclaim(self, stream: str, count: int) -> None:
        claimed = await claim_idle(
            self.redis,
            stream,
            self.group,
            self.consumer,
            self.settings.claim_idle_ms,
            self._reclaim_cursor[stream],
            count,
        )
        self._reclaim_cursor[stream] = claimed.cursor
        if claimed.lost:  # pending entries trimmed away before anyone acked them
            log.error("pending entries were trimmed away", stream=stream, count=claimed.lost)
        if not claimed.entries:
            return
        metrics.RECLAIMED.labels(str(self.role)).inc(len(claimed.entries))
        await self._admit(
            [(stream, eid, f, claimed.deliveries.get(eid, 2)) for eid, f in claimed.entries]
        )
