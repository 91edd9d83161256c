"""Publishing a conversation's runs in turn: the hand-over and the sweeper.

A run is published by one Lua script (`bus.publish_once`) that records its owner and queues
its intake command for fair admission (`bus.fairshare`) together, so publishing the same
run id twice is a no-op. A run that waited
its turn (`bus.store.turns`) is stored with the script's keys and arguments; whoever
promotes it (the run-end hook of the run before it, an admission that found that run
stale, the sweeper) publishes it from that record with a fresh deadline. A crash between
the promotion's commit and the publish is repaired by the sweeper, which publishes again
every running turn whose run has not reached intake.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import TYPE_CHECKING

import structlog

from bus import wire
from bus.commands import AgentTask
from bus.publish_once import COMMAND_ARG, DEADLINE_ARG, NOW_ARG
from bus.readers import COMMAND
from bus.store.turn_types import Turn
from bus.store.turns import TurnStore

if TYPE_CHECKING:
    from bus.events import RunStatus
    from bus.first_turns import FirstTurns
    from bus.store import Scope
    from bus.typed_redis import Script

log = structlog.get_logger("api.turns")

#: How long a running turn may wait for its run to reach intake before the sweeper
#: publishes it again (a no-op if the first publish happened).
UNSTARTED_GRACE_S = 15.0


def publish_call(keys: list[str], args: list[str | int | float]) -> str:
    """The stored form of one call of the publish-once script."""
    return json.dumps({"keys": keys, "args": args})


class TurnPublisher:
    """Publishes the run whose turn has come.

    Args:
        script: the publish-once script (`bus.publish_once.publish_once`).
        turns: the conversation turns.
        first_turns: conversations' first turns, kept in Redis with their runs (None: a
            first turn is written to SQL before its run is published).
    """

    def __init__(
        self, script: Script, turns: TurnStore, first_turns: FirstTurns | None = None
    ) -> None:
        self.turns = turns
        self.first_turns = first_turns
        self._script = script

    async def run_script(self, keys: list[str], args: list[str | int | float]) -> int:
        """Run the publish-once script (1 published, 0 already, -1 another owner's run id, -2 the
        tenant's fair-share queue is full: the sweeper publishes it again later)."""
        reply = await self._script(keys=keys, args=args)
        return int(reply[0])

    async def publish(self, turn: Turn) -> None:
        """Publish a promoted turn's run, starting its time budget now."""
        if not turn.publish:  # a first turn, published with its record (`bus.first_turns`)
            return
        doc = json.loads(turn.publish)
        keys: list[str] = doc["keys"]
        args: list[str | int | float] = doc["args"]
        command = COMMAND.read_json(str(args[COMMAND_ARG]))
        now = time.time()
        command = command.with_deadline(turn.running_until or now + turn.timeout_s)
        if isinstance(command.payload, AgentTask):
            task = AgentTask(state=command.payload.state.started(now))
            command = command.with_payload(task)
        args[COMMAND_ARG] = wire.encode(command)
        args[DEADLINE_ARG], args[NOW_ARG] = command.deadline, now  # for fair admission
        await self.run_script(keys, args)
        log.info("turn published", run_id=turn.run_id, conversation_id=turn.conversation_id)

    async def finished(
        self, owner: Scope, run_id: str, status: RunStatus, partial: str | None
    ) -> None:
        """The run ended: end its turn and publish the next one of its conversation."""
        turn = await self.turns.finish(owner, run_id, status, partial)
        if turn is not None:
            await self.publish(turn)

    async def sweep(self) -> int:
        """Publish every turn that is due but may not have been published; how many."""
        due = await self.turns.due(UNSTARTED_GRACE_S)
        for turn in due:
            await self.publish(turn)
        return len(due)

    async def sweep_forever(self, interval_s: float) -> None:
        """`sweep` at start and then every ``interval_s`` (an API replica runs this)."""
        while True:
            try:
                await self.sweep()
            except Exception as e:  # the loop must outlive any one failure
                log.warning("turn sweep failed", error=repr(e))
            await asyncio.sleep(interval_s)
