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
from typing import TYPE_CHECKING

from api.app.feed import Outbox, RunFeed
from bus import keys
from bus.events import ClientEvent, event_from_doc

if TYPE_CHECKING:
    from api.app.deps import ApiDeps


async def follow_run(
    deps: ApiDeps, run_id: str, shard: int, *, after: str = "0-0", idle_s: float = 15.0
) -> AsyncGenerator[ClientEvent | None]:
    """The run's events after ``after``, until its ``done`` (None on each idle period)."""
    last = after
    stream = keys.run_events(run_id, shard)
    while True:
        outbox = Outbox(deps.settings.ws_buffer_events)
        feed = RunFeed(
            deps.relay, run_id=run_id, stream=stream, shard=shard, after=last,
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
