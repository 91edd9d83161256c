"""Publishing runs on Redis (`api.app.ports.RunPublishing`): the publish-once script.

A run is published by one Lua script (`bus.publish_once.PUBLISH_ONCE`) that records its
owner and queues its intake command for fair admission (`bus.fairshare`), with its
webhook's registration: publishing the same run id again is a no-op. A run checked against
its tenant's settings version is published by the variant that checks it first
(`bus.publish_once.PUBLISH_IF_CURRENT`), and a conversation's first run by the one that
writes the conversation's first turn with it (`bus.first_turns`). A run queued behind its
conversation's running run keeps the script's keys and arguments with its turn
(`PreparedRun.stored`); whoever promotes it publishes it from that record with a fresh
deadline (`RedisTurnPublishing.publish_queued`).
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any

from api.app.access import owner_value
from api.app.ports import Outcome, Published
from bus import fairshare, keys, tracing, wire
from bus.commands import AgentTask, Command, RunState, TraceContext
from bus.first_turns import FirstTurns
from bus.publish_once import (
    COMMAND_ARG,
    DEADLINE_ARG,
    NOW_ARG,
    publish_if_current,
    publish_once,
)
from bus.readers import COMMAND
from gateway.webhooks.schedule import WebhookSpec, registration

if TYPE_CHECKING:
    from redis.asyncio import Redis

    from api.app.ask import RunToPublish
    from api.app.auth import Principal
    from api.app.webhook_requests import WebhookRequest
    from bus.settings import BusSettings
    from bus.store.turn_types import FirstTurn, Turn
    from bus.typed_redis import Script

#: The keys and the arguments of one call of the publish-once script.
PublishCall = tuple[list[str], list[str | int | float]]

#: What the publish-once script answers, by its first element.
_OUTCOMES = {
    1: Outcome.PUBLISHED,
    0: Outcome.REPEATED,
    -1: Outcome.ID_TAKEN,
    -2: Outcome.QUEUE_FULL,
    -3: Outcome.VERSION_MOVED,
}


def webhook_registration(
    who: Principal,
    webhook: WebhookRequest,
    run_id: str,
    shard: int,
    conversation_id: str,
) -> PublishCall:
    """The extra keys and arguments of the run-start script that register the webhook
    (whose URL `api.app.webhook_requests.check_webhook` normalised)."""
    spec = WebhookSpec(
        url=webhook.url,
        tenant_id=who.tenant_id,
        subject=who.subject,
        approvals=webhook.approvals,
        conversation_id=conversation_id,
    )
    run_keys = [
        keys.run_webhook(run_id, shard),
        keys.webhook_watch(shard),
        keys.webhook_wake(shard),
    ]
    return run_keys, [registration(spec), time.time(), run_id]


def intake_call(run: RunToPublish, bus: BusSettings) -> PublishCall:
    """The publish-once call that starts the run: its intake command in the current trace
    (else the caller's), with the caller's ACL groups, queued at the run's priority."""
    who, ask, run_id, shard, deadline = run.who, run.ask, run.run_id, run.shard, run.deadline
    conversation_id, settings = run.conversation_id, run.settings
    command = Command(
        run_id=run_id,
        tenant_id=who.tenant_id,
        subject=who.subject,
        shard=shard,
        role=keys.Role.INTAKE,
        deadline=deadline,
        trace=tracing.current() or ask.trace or TraceContext(),
        reply_to=ask.reply_to,
        groups=who.groups,
        payload=AgentTask(
            state=RunState(
                question=ask.question,
                conversation_id=conversation_id,
                parent_message_id=ask.parent_message_id,
                settings=settings,
                started_at=time.time(),
            )
        ),
    )
    run_keys = [keys.run_owner(run_id, shard), keys.role_stream(keys.Role.INTAKE, shard)]
    run_keys += keys.fair_keys(shard)
    args: list[str | int | float] = [owner_value(who.tenant_id, who.subject), bus.run_ttl_s]
    args += [bus.stream_maxlen, wire.encode(command), int(bus.fair_share), who.tenant_id]
    args += [fairshare.LEVEL[settings.priority], run_id, deadline, run.weight]
    args += [bus.fair_max_pending, time.time(), bus.fair_depth, bus.fair_inflight]
    if ask.webhook is not None:
        extra_keys, extra_args = webhook_registration(
            who, ask.webhook, run_id, shard, conversation_id
        )
        run_keys, args = [*run_keys, *extra_keys], [*args, *extra_args]
    return run_keys, args


def publish_call(run_keys: list[str], args: list[str | int | float]) -> str:
    """The stored form of one call of the publish-once script (a queued turn keeps it)."""
    return json.dumps({"keys": run_keys, "args": args})


def published(reply: Any) -> Published:
    """What the publish-once script answered, as the port's value."""
    outcome = _OUTCOMES[int(reply[0])]
    if outcome == Outcome.VERSION_MOVED:
        return Published(outcome, version=int(reply[1]))
    if outcome == Outcome.QUEUE_FULL:
        waiting, room = int(reply[1]), int(reply[2])
        return Published(
            outcome, waiting=waiting, retry_after_s=fairshare.retry_after_s(waiting, room)
        )
    return Published(outcome)


class RedisTurnPublishing:
    """Publishes queued turns' runs with the publish-once script (`TurnPublishing`).

    Args:
        redis: the shared Redis client.
    """

    def __init__(self, redis: Redis) -> None:
        self._redis = redis
        self._publish: Script = publish_once(redis)

    async def publish_queued(self, turn: Turn) -> Published:
        """Publish the turn's run from its stored call, starting its time budget now."""
        doc = json.loads(turn.publish)
        run_keys: list[str] = doc["keys"]
        args: list[str | int | float] = doc["args"]
        command = COMMAND.read_json(str(args[COMMAND_ARG]))
        now = time.time()
        command = command.with_deadline(turn.running_until or now + turn.timeout_s)
        if isinstance(command.payload, AgentTask):
            task = AgentTask(state=command.payload.state.started(now))
            command = command.with_payload(task)
        args[COMMAND_ARG] = wire.encode(command)
        args[DEADLINE_ARG], args[NOW_ARG] = command.deadline, now  # for fair admission
        return published(await self._publish(keys=run_keys, args=args))


class RedisRunPublishing(RedisTurnPublishing):
    """Publishes runs with the publish-once script and its variants (`RunPublishing`).

    Args:
        redis: the shared Redis client.
        bus: the bus's settings (shards, stream cap, key lifetime, fair share).

    Attributes:
        first_turns: conversations' first turns, written by a run's publication and read
            by the next question's admission.
    """

    def __init__(self, redis: Redis, bus: BusSettings) -> None:
        super().__init__(redis)
        self._bus = bus
        self._if_current: Script = publish_if_current(redis)
        self.first_turns = FirstTurns(redis, bus.shards)

    def shard_of(self, id_: str) -> int:
        """The shard a run (or a conversation) of this id lives on."""
        return keys.shard_of(id_, self._bus.shards)

    def prepare(self, run: RunToPublish) -> _PreparedRun:
        """The run's publish-once call."""
        return _PreparedRun(self, run, *intake_call(run, self._bus))

    async def owner(self, run_id: str) -> str | None:
        """The run's owner key's value."""
        raw = await self._redis.get(keys.run_owner(run_id, self.shard_of(run_id)))
        return raw.decode() if isinstance(raw, bytes) else raw

    async def send_call(
        self,
        run: RunToPublish,
        run_keys: list[str],
        args: list[str | int | float],
        version: int | None,
        first_turn: FirstTurn | None,
    ) -> Published:
        """Run one publish-once call: the variant the version and the first turn ask for."""
        who, shard = run.who, run.shard
        if first_turn is not None:
            first_turns = self.first_turns
            version_key = keys.tenant_settings_version_on(who.tenant_id, shard)
            expected = "" if version is None else version
            reply = await first_turns.script(
                keys=[*run_keys, first_turns.key(run.conversation_id), version_key],
                args=[*args, first_turn.dumps(), expected],
            )
        elif version is None:
            reply = await self._publish(keys=run_keys, args=args)
        else:
            version_key = keys.tenant_settings_version_on(who.tenant_id, shard)
            reply = await self._if_current(keys=[*run_keys, version_key], args=[*args, version])
        return published(reply)


class _PreparedRun:
    """One run's publish-once call (`PreparedRun`)."""

    __slots__ = ("_args", "_keys", "_publishing", "_run")

    def __init__(
        self,
        publishing: RedisRunPublishing,
        run: RunToPublish,
        run_keys: list[str],
        args: list[str | int | float],
    ) -> None:
        self._publishing = publishing
        self._run = run
        self._keys = run_keys
        self._args = args

    def stored(self) -> str:
        """The call as a queued turn keeps it."""
        return publish_call(self._keys, self._args)

    async def publish(
        self, *, version: int | None = None, first_turn: FirstTurn | None = None
    ) -> Published:
        """Run the call (the variant the version and the first turn ask for)."""
        return await self._publishing.send_call(
            self._run, self._keys, self._args, version, first_turn
        )
