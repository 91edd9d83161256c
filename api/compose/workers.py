"""A process's workers: one per role, wired to its handler, the run-end hook and the ledger."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Iterable
from functools import partial

import structlog
from redis.asyncio import Redis

from agents.roles.remember import MEMORY_KIND, make_memory_applier
from api.app.turn_publisher import TurnPublisher
from api.compose.faults import fault
from api.compose.roles import Roles
from api.compose.store_owner import StoreOwner
from api.streams import limits
from api.streams.run_publishing import RedisTurnPublishing
from bus import keys, wire
from bus.commands import Command, RunResult
from bus.errors import StoreError
from bus.events import FinalStatus, RunStatus, parse_event
from bus.fairshare import FairShare
from bus.keys import INGEST_LANE, Role
from bus.run_state import RunState
from bus.runtime.context import StepResult
from bus.runtime.recorder import Applier, Recorder
from bus.runtime.runner import Consumer
from bus.runtime.worker import ErasedHook, RunEndHook, Worker
from bus.settings import BusSettings
from bus.store import RunStore, Scope, Stores
from bus.store.turn_types import TurnEnd
from bus.store.turns import TurnStore
from bus.transcript import partial_answer, trace_entries
from gateway.audit import AUDIT_KIND, make_audit_applier
from gateway.webhooks.worker import WebhookWorker

log = structlog.get_logger("api.workers")


def run_end_recorder(
    runs: RunStore,
    redis: Redis | None = None,
    turns: TurnStore | None = None,
    fair: FairShare | None = None,
    *,
    ahead_of_commit: bool = False,
) -> RunEndHook:
    """A hook that records a run's final status in the store (idempotent).

    A run that ends other than ``done`` keeps its story: with ``redis``, its trace (the
    events so far and the ones it ends with: the error, what it streamed of its answer)
    is stored with the status, so reopening it once its events have expired still shows
    what happened and the partial answer (`bus.transcript.partial_answer`).

    With ``redis`` it also gives the run's concurrent-run slot back (``api.streams.limits``):
    this hook runs however a run ends, so the quota never waits for the run's deadline. And
    a run that ends other than ``done`` answers its ``reply_to`` stream here (the finalizer
    answers for ``done``), so an external publisher never waits for a reply that won't come.
    With ``fair``, the run's room in its shard goes to the next waiting run (`bus.fairshare`).
    With ``ahead_of_commit`` (one Redis, not a cluster), those two commands are queued on
    the pipelined connection and not waited for: they leave in the socket write that
    carries the step's commit, ahead of it, so Redis still applies them first (one
    connection, in order) and a run that reads as ended has given both back.

    With ``turns`` too, it ends the run's conversation turn and publishes the question that
    waited behind it (`api.app.turn_publisher`): the turn ends in the transaction that
    records the run's end and its answer (the finalizer's, or this hook's for a run that
    ended otherwise), so the next run's history holds them. The hook runs before the run's
    last step commits: a crash before the publish redelivers that step, whose end names the
    same turn again, and a repeat publishes nothing twice (`api.streams.run_publishing`). A run a
    later question cancelled ends with the code ``interrupted`` or ``rolled_back`` (its
    ``error_code``, the reply's ``stop_reason``).
    """
    publisher = (
        None if redis is None or turns is None else TurnPublisher(RedisTurnPublishing(redis), turns)
    )

    async def give_back(command: Command) -> None:
        # The run's room in its shard and its concurrent-run slot: one round trip together.
        given: list[Coroutine[object, object, object]] = []
        if fair is not None:
            given.append(fair.finished(command.shard, command.run_id))
        if redis is not None:
            given.append(limits.release(redis, command.tenant_id, command.run_id))
        if not ahead_of_commit:
            await asyncio.gather(*given)
            return
        for sending in [asyncio.ensure_future(g) for g in given]:
            _GIVING.add(sending)  # the loop keeps only a weak reference to a task
            sending.add_done_callback(_given)
        # One turn of the loop: each has queued its command (the step's commit, queued
        # when this returns, follows them in the same write).
        await asyncio.sleep(0)

    async def hand_on(turn_end: TurnEnd) -> None:
        if publisher is not None and turn_end.next is not None:
            await publisher.publish(turn_end.next)
        fault("after_handoff")

    async def record(command: Command, status: FinalStatus, ending: StepResult) -> None:
        await give_back(command)
        owner = Scope.user(command.tenant_id, command.subject)
        code = await end_code(turns, owner, command.run_id, status)
        carried = getattr(command.payload, "state", None)
        state = carried if isinstance(carried, RunState) else None
        conversation = state.conversation_id if state else None
        # Only a run asked in a conversation has a turn to end (no store read otherwise).
        turn = publisher if state is None or conversation else None
        if redis is not None and command.reply_to and status != "done":
            result = RunResult(
                run_id=command.run_id,
                tenant_id=command.tenant_id,
                status=status,
                conversation_id=conversation,
                stop_reason=code,
            )
            await redis.xadd(command.reply_to, {wire.DATA_FIELD: wire.encode(result)})
        if ending.turn_end is not None:
            # The finalizer ended the run and its turn together: what is left is to publish
            # the turn that runs next (again, after a crash: a no-op).
            await hand_on(ending.turn_end)
            return
        if status == "done":
            # The finalizer records `done` together with the answer and trace.
            if turn is not None:
                await turn.finished(owner, command.run_id, RunStatus.DONE, None)
            return
        if redis is None:
            await runs.set_status(owner, command.run_id, RunStatus(status), error_code=code)
            return
        rows = await redis.xrange(keys.run_events(command.run_id, command.shard))
        events = [parse_event(wire.raw_data(fields)) for _, fields in rows]
        trace = trace_entries([*events, *ending.events])
        usage = state.usage if state and state.usage else None
        if conversation and turns is not None:
            turn_end = await runs.end_turn(
                owner,
                command.run_id,
                RunStatus(status),
                conversation,
                answer=None,
                trace=trace,
                usage=usage,
                error_code=code,
                partial=partial_answer(trace),
            )
            await hand_on(turn_end)
            return
        await runs.end(
            owner,
            command.run_id,
            RunStatus(status),
            answer=None,
            trace=trace,
            usage=usage,
            error_code=code,
        )
        if turn is not None:
            await turn.finished(owner, command.run_id, RunStatus(status), partial_answer(trace))

    return record


#: The give-backs sent ahead of a commit whose replies are still to come.
_GIVING: set[asyncio.Future[object]] = set()


def _given(sending: asyncio.Future[object]) -> None:
    _GIVING.discard(sending)
    if not sending.cancelled() and sending.exception() is not None:
        log.error("run-end give-back failed", error=repr(sending.exception()))


def erased_releaser(redis: Redis, fair: FairShare) -> ErasedHook:
    """What a step of a user being erased gives back (`bus.fence`): its run's room in its
    shard and its concurrent-run slot, as the run-end hook would; nothing is written."""

    async def release(command: Command) -> None:
        await fair.finished(command.shard, command.run_id)
        await limits.release(redis, command.tenant_id, command.run_id)

    return release


async def end_code(turns: TurnStore | None, owner: Scope, run_id: str, status: FinalStatus) -> str:
    """What a run that ended is stored and answered with: its status, or, for a run a later
    question cancelled (``multitask``), ``interrupted`` or ``rolled_back``."""
    if turns is None or status != "cancelled":
        return status
    try:
        return await turns.cancelled_by(owner, run_id) or status
    except StoreError:  # the store is down: the plain status, the rest of the hook still runs
        return status


#: The roles whose steps check a tenant's cached settings (its tools, policy, preferences)
#: or the erasure fence (the intake): their workers read the shards' epochs with each read
#: (`bus.epochs`), so a step learns whether what it caches is current without a round trip.
EPOCH_ROLES = frozenset({Role.INTAKE, Role.RESEARCHER, Role.GATEWAY, Role.AGENT, Role.MEMORY})


def build_workers(
    roles: Iterable[Role],
    redis: Redis,
    settings: BusSettings,
    handlers: Roles,
    *,
    concurrency: int = 1,
    own_store: bool = False,
) -> list[Consumer]:
    """One worker per role, each wired to its handler and the run-end recorder.

    The ``recorder`` role is the ledger's consumer (`bus.runtime.recorder`), not a step
    worker: it writes the records steps commit (audit rows) to the store in batches. A
    process with gateway workers also sends webhooks (`gateway.webhooks`): from the same
    network position, through the same egress path. The ``retrieval`` role reads its main
    stream and its ingest lane (a large ingest job never queues searches). With
    ``own_store`` (``agentbus up`` and ``worker``), it opens the vector store itself and
    reads only while it owns it (`StoreOwner`); otherwise it uses the store ``handlers``
    holds, if any.
    """
    fair = FairShare(redis, settings)
    hook = run_end_recorder(
        handlers.stores.runs,
        redis,
        handlers.stores.turns,
        fair,
        ahead_of_commit=not settings.redis_cluster,
    )
    fence = handlers.fence()
    released = erased_releaser(redis, fair)
    workers: list[Consumer] = []
    for role in roles:
        if role == Role.RECORDER:
            workers.append(
                Recorder(
                    redis, settings, ledger_appliers(handlers.stores, redis, shards=settings.shards)
                )
            )
            continue
        if role == Role.RETRIEVAL and own_store:
            workers.append(
                StoreOwner(
                    handlers.retrieval_handler,
                    redis,
                    settings,
                    handlers.settings.retrieval,
                    concurrency=concurrency,
                    on_run_end=hook,
                    fence=fence,
                    on_erased=released,
                )
            )
            continue
        handler = handlers.handler(role)
        lanes = (None, INGEST_LANE) if role == Role.RETRIEVAL else (None,)
        # The researchers say how much work the shards may admit (`bus.fairshare`).
        duties = [partial(fair.tick_loop, concurrency)] if role == Role.RESEARCHER else []
        workers.extend(
            Worker(
                role,
                handler,
                redis,
                settings,
                concurrency=concurrency,
                # The memory role's steps come after their run ended: they never end it.
                on_run_end=None if role == Role.MEMORY else hook,
                lane=lane,
                duties=duties,
                after_run=role == Role.MEMORY,
                fence=fence,
                on_erased=released,
                watch_epochs=role in EPOCH_ROLES,
            )
            for lane in lanes
        )
        secrets = handlers.stores.webhook_secrets
        if role == Role.GATEWAY and secrets is not None:
            gateway = handlers.settings.gateway
            policies = handlers.tenant_policies()
            workers.append(WebhookWorker(redis, gateway, settings, secrets, policies))
    return workers


def ledger_appliers(
    stores: Stores, redis: Redis | None = None, *, shards: int = 1
) -> dict[str, Applier]:
    """How the recorder writes each kind of ledger record (``redis``: where a user's first
    memory is marked, `bus.keys.user_memories`, on a bus of ``shards``)."""
    appliers: dict[str, Applier] = {}
    if stores.audit is not None:
        appliers[AUDIT_KIND] = make_audit_applier(stores.audit)
    if stores.memories is not None:
        appliers[MEMORY_KIND] = make_memory_applier(stores.memories, redis, shards=shards)
    return appliers
