"""One client's view of run events: a bounded outbox, and per-run feeds with no gap and no
duplicate.

A :class:`RunFeed` subscribes to the relay *first*, holding live entries aside, then
reads what the relay had already passed (``XRANGE``), then releases the held entries.
Every entry goes through one ``last_id`` check, so whatever overlaps is dropped. The
:class:`Outbox` is the connection's only buffer: when a client is too slow and it
fills, the client is cut off (and resumes with ``join``) instead of growing memory.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from api.app.ports import RunEvents, Subscription

_DONE = b'"done"'
_PAGE = 500


@dataclass(frozen=True, slots=True)
class Frame:
    """A frame ready to send; events carry their run and stream id."""

    text: str
    run_id: str | None = None
    event_id: str | None = None
    last: bool = False  # the run's `done`: nothing follows for this run
    added_ms: int | None = None  # XADD time of an event added after its feed started


def event_frame(event_id: str, data: bytes) -> str:
    """The event's JSON with its stream id added as ``id`` (no re-encoding)."""
    body = data.decode()
    return '{"id":"' + event_id + '",' + body[1:] if body.startswith("{") else body


def is_done(data: bytes) -> bool:
    """Whether an event is its run's ``done`` (the top-level type, not a nested one).

    A substring test first keeps the JSON parse off the hot path of token events.
    """
    return _DONE in data and json.loads(data).get("type") == "done"


def newer(a: str, b: str) -> bool:
    """Whether stream id ``a`` comes after ``b``."""
    am, _, aseq = a.partition("-")
    bm, _, bseq = b.partition("-")
    return (int(am), int(aseq or 0)) > (int(bm), int(bseq or 0))


class Outbox:
    """A bounded queue of frames for one connection.

    Control frames (replies to the client's own frames) always fit; event frames beyond
    ``limit`` mark the outbox ``overflowed`` and wake the sender, which cuts the client off.
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.overflowed = False
        self._items: deque[Frame] = deque()
        self._ready = asyncio.Event()
        self.closed = False

    def __len__(self) -> int:
        return len(self._items)

    def put(self, frame: Frame) -> bool:
        """Queue an event frame; False (and overflowed) when the client is too far behind."""
        if self.overflowed or self.closed:
            return False
        if len(self._items) >= self.limit:
            self.overflowed = True
            self._ready.set()
            return False
        self._items.append(frame)
        self._ready.set()
        return True

    def overflow(self) -> None:
        """Mark the client too slow and wake the sender to cut it off."""
        self.overflowed = True
        self._ready.set()

    def put_control(self, frame: Frame) -> None:
        """Queue a reply to the client; it is bounded by the client's own frames."""
        if not self.closed:
            self._items.append(frame)
            self._ready.set()

    def close(self) -> None:
        """Wake the sender for good."""
        self.closed = True
        self._ready.set()

    async def get(self) -> Frame | None:
        """The next frame, or None once the outbox overflowed or closed."""
        while True:
            if self.overflowed or (self.closed and not self._items):
                return None
            if self._items:
                return self._items.popleft()
            self._ready.clear()
            await self._ready.wait()


class RunFeed:
    """One run's events for one client, after ``after``, until ``done``.

    Args:
        relay: the process's run feed (``api.streams.relay.Relay``), which also reads what it
            had already passed.
        run_id: the run.
        stream: its event stream.
        shard: its shard.
        after: the last event id the client has (``"0-0"`` for everything).
        outbox: where frames go.
        on_end: called once when the feed ends (``done`` seen or outbox overflowed).
    """

    def __init__(
        self,
        relay: RunEvents,
        *,
        run_id: str,
        stream: str,
        shard: int,
        after: str,
        outbox: Outbox,
        on_end: Callable[[RunFeed], None] | None = None,
    ) -> None:
        self.run_id = run_id
        self.last_id = after
        self.done = False  # ended: saw the run's `done`, or the client fell too far behind
        self.finished = False  # saw the run's `done`
        self._relay = relay
        self._stream, self._shard = stream, shard
        self._outbox = outbox
        self._on_end = on_end
        self._holding = True
        self._held: list[tuple[str, bytes]] = []
        self._sub: Subscription | None = None
        self._catch_up_to: str | None = None
        self._since_ms = time.time_ns() // 1_000_000  # whole ms, as entry ids have

    async def start(self) -> None:
        """Subscribe, catch up, then go live."""
        self.subscribe()
        await self.go_live()

    def subscribe(self) -> None:
        """Start receiving; entries are held until :meth:`go_live` (e.g. until an ``accepted``
        frame is queued, so a run's events never overtake it)."""
        self._sub, self._catch_up_to = self._relay.subscribe(
            self._stream, self._shard, self.last_id, self._on_entry
        )

    async def go_live(self) -> None:
        """Catch up on what the relay had already read, then release the held entries."""
        try:
            if self._catch_up_to is not None:
                await self._catch_up(self._catch_up_to)
        except BaseException:
            self.close()
            raise
        # From here on no await until live: the relay cannot interleave with the release.
        self._holding = False
        held, self._held = self._held, []
        for event_id, data in held:
            self._deliver(event_id, data)

    def close(self) -> None:
        """Stop receiving (idempotent)."""
        if self._sub is not None:
            self._relay.unsubscribe(self._sub)
        if not self.done:
            self.done = True
            if self._on_end is not None:
                self._on_end(self)

    async def _catch_up(self, until: str) -> None:
        start = self.last_id
        while True:
            rows = await self._relay.read_range(self._stream, start, until, _PAGE)
            for event_id, data in rows:
                self._deliver(event_id, data)
            if len(rows) < _PAGE or self.done:
                return
            start = rows[-1][0]

    def _on_entry(self, event_id: str, data: bytes) -> None:
        if self._holding:
            if len(self._held) + len(self._outbox) >= self._outbox.limit:
                self._outbox.overflow()
                self.close()
                return
            self._held.append((event_id, data))
            return
        self._deliver(event_id, data)

    def _deliver(self, event_id: str, data: bytes) -> None:
        if self.done or not newer(event_id, self.last_id):
            return
        self.last_id = event_id
        last = is_done(data)
        added_ms = int(event_id.partition("-")[0])
        live = added_ms if added_ms >= self._since_ms else None
        frame = Frame(event_frame(event_id, data), self.run_id, event_id, last, live)
        if not self._outbox.put(frame):
            self.close()
            return
        if last:
            self.finished = True
            self.close()
