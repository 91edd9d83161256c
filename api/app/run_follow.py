"""A run's events as typed models, for endpoints that consume them in-process.

It reads through the process's relay (``api.app.feed.RunFeed``: no gap, no duplicate) and, if
the consumer falls so far behind that the bounded outbox overflows, starts a new feed after
the last event it yielded instead of failing. Yields None when nothing arrived for
``idle_s`` seconds, so a streaming response can send a keep-alive.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncGenerator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from api.app.feed import Outbox, RunFeed
from bus.events import ClientEvent, event_from_doc, parse_event

if TYPE_CHECKING:
    from api.app.ports import RunEvents


@dataclass(frozen=True, kw_only=True)
class RunFollower:
    """Follows a run's events in-process.

    Attributes:
        events: the process's reader of run event streams.
        buffer_events: how many events may wait for a slow consumer before its feed restarts.
    """

    events: RunEvents
    buffer_events: int

    def shard_of(self, run_id: str) -> int:
        """The shard of the run's streams."""
        return self.events.shard_of(run_id)

    async def history(self, run_id: str) -> list[tuple[str, ClientEvent]]:
        """The run's events so far, with their stream ids, oldest first."""
        rows = await self.events.history(self.events.stream_of(run_id, self.shard_of(run_id)))
        return [(entry_id, parse_event(data)) for entry_id, data in rows]

    def feed(self, run_id: str, *, after: str) -> tuple[RunFeed, Outbox]:
        """A feed of the run's event frames after ``after`` and the outbox it fills (for a
        transport that relays the frames as they are); the caller starts and closes it."""
        outbox = Outbox(self.buffer_events)
        shard = self.shard_of(run_id)
        stream = self.events.stream_of(run_id, shard)
        feed = RunFeed(
            self.events, run_id=run_id, stream=stream, shard=shard, after=after,
            outbox=outbox,
        )  # fmt: skip
        return feed, outbox

    async def follow(
        self, run_id: str, *, after: str = "0-0", idle_s: float = 15.0
    ) -> AsyncGenerator[ClientEvent | None]:
        """The run's events after ``after``, until its ``done`` (None on each idle period)."""
        shard = self.shard_of(run_id)
        last = after
        stream = self.events.stream_of(run_id, shard)
        while True:
            outbox = Outbox(self.buffer_events)
            feed = RunFeed(
                self.events, run_id=run_id, stream=stream, shard=shard, after=last,
                outbox=outbox,
            )  # fmt: skip
            try:
                await feed.start()
                while True:
                    try:
                        frame = await asyncio.wait_for(outbox.get(), idle_s)
                    except TimeoutError:
                        yield None
                        continue
                    if frame is None:  # overflowed: a new feed continues after `last`
                        break
                    doc = json.loads(frame.text)
                    doc.pop("id", None)
                    yield event_from_doc(doc)
                    last = frame.event_id or last
                    if frame.last:
                        return
            finally:
                feed.close()
