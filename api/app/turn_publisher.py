"""Publishing a conversation's runs in turn: the hand-over and the sweeper.

A run is published exactly once (`api.app.ports.RunPublishing`: its owner recorded and its
intake command queued for fair admission together), so publishing the same run id twice
is a no-op. A run that waited its turn (`bus.store.turns`) is stored with its publication
(`PreparedRun.stored`); whoever promotes it (the run-end hook of the run before it, an
admission that found that run stale, the sweeper) publishes it from that record with a
fresh deadline (`TurnPublishing.publish_queued`). A crash between the promotion's commit
and the publish is repaired by the sweeper, which publishes again every running turn whose
run has not reached intake.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import structlog

from bus.store.turn_types import Turn
from bus.store.turns import TurnStore

if TYPE_CHECKING:
    from api.app.ports import FirstTurnRecords, TurnPublishing
    from bus.events import RunStatus
    from bus.store import Scope

log = structlog.get_logger("api.turns")

#: How long a running turn may wait for its run to reach intake before the sweeper
#: publishes it again (a no-op if the first publish happened).
UNSTARTED_GRACE_S = 15.0


class TurnPublisher:
    """Publishes the run whose turn has come.

    Args:
        publishing: publishes a queued turn's run from what the turn kept.
        turns: the conversation turns.
        first_turns: conversations' first turns, kept with their runs (None: a first turn
            is written to SQL before its run is published).
    """

    def __init__(
        self,
        publishing: TurnPublishing,
        turns: TurnStore,
        first_turns: FirstTurnRecords | None = None,
    ) -> None:
        self.turns = turns
        self.first_turns = first_turns
        self._publishing = publishing

    async def publish(self, turn: Turn) -> None:
        """Publish a promoted turn's run, starting its time budget now (a full fair-share
        queue refuses it: the sweeper publishes it again later)."""
        if not turn.publish:  # a first turn, published with its run
            return
        await self._publishing.publish_queued(turn)
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
