"""How a client (re)joins a run's events: replay from its last event id, or a snapshot first.

The edge follows a run from its event stream (`api.streams.relay`); this decides, from the
stream's state and the stored run, whether what the client missed can be replayed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from api.app.access import RUN_ID, RunAccess, RunRef, owner_value
from api.app.errors import RunNotFound
from api.app.run_view import describe
from bus.store import RunRecord

if TYPE_CHECKING:
    from api.app.auth import Principal
    from api.app.ports import RunEvents, StreamState


def _id(value: bytes | str) -> tuple[int, int]:
    text = value.decode() if isinstance(value, bytes) else value
    ms, _, seq = text.partition("-")
    return int(ms), int(seq or 0)


def needs_snapshot(state: StreamState, after: str, record: RunRecord | None) -> bool:
    """Whether events after ``after`` are gone, so the client must start from a snapshot.

    A stream that no longer exists lost everything once its run ended (it expires
    ``events_ttl_s`` later); before intake ran it just does not exist yet. Trimming
    removes the oldest entries, so events are missing when ``after`` is older than the
    first entry left and something was removed (Redis 7 counts ``entries-added``; on 6.2
    any id but ``0-0`` older than the first entry is taken as trimmed).
    """
    if not state.exists:
        return record is not None and record.is_terminal
    if state.max_deleted_id is not None and _id(state.max_deleted_id) > _id(after):
        return True
    if state.first_id is None or _id(state.first_id) <= _id(after):
        return False
    if state.entries_added is not None:
        return state.entries_added > state.length
    return after != "0-0"


@dataclass(frozen=True, slots=True)
class JoinPlan:
    """How to serve a client that (re)joins a run after event ``after``.

    Attributes:
        snapshot: the run as stored, to send first when the missed events are gone (or
            nothing newer will come); None when the events themselves can be replayed.
        follow_after: the event id to follow the stream from; None when the run is over
            and the snapshot is all there is.
    """

    snapshot: dict[str, Any] | None
    follow_after: str | None


async def plan_join(events: RunEvents, ref: RunRef, after: str) -> JoinPlan:
    """Replay from ``after`` when possible, else a snapshot and the live events after it."""
    return _plan(ref, await events.stream_state(events.stream_of(ref.run_id, ref.shard)), after)


#: A run published less than this long ago (and under ``events_ttl_s``) whose event stream
#: does not exist has written no event yet (see :meth:`Joins.join`).
FRESH_RUN_S = 60


@dataclass(frozen=True, kw_only=True)
class Joins:
    """A client (re)joining a run's events: who may, and from where.

    Attributes:
        access: which runs the caller may see.
        events: the process's reader of run event streams.
        run_ttl_s: how long a run's owner key lives from its publish.
        events_ttl_s: how long a run's event stream lives after its end.
    """

    access: RunAccess
    events: RunEvents
    run_ttl_s: int
    events_ttl_s: int

    async def join(
        self, who: Principal, run_id: str, after: str, *, read: str = "read_run_events"
    ) -> tuple[RunRef, JoinPlan]:
        """:meth:`RunAccess.visible` and :func:`plan_join` for a client that follows a run's events.

        The run's owner key and its event stream share a hash tag, so one pipelined round trip
        reads both. When the owner key names the caller, the stored record would change
        nothing, so it is not read (the caller sees its own run: nothing to audit either):

        * the stream has events after ``after``: an existing stream never needs the record
          (only a stream that is gone or has nothing newer does, to snapshot a run that is
          over);
        * the stream does not exist and the run was published less than ``FRESH_RUN_S`` (and
          ``events_ttl_s``) ago, as the owner key's remaining life (set once, at publish, to
          ``run_ttl_s``) tells: a run that ended keeps its stream ``events_ttl_s`` after its
          end (every end writes ``done``), so a missing stream means no event yet, and the
          record, if intake stored it already, is not terminal. This is the usual case of a
          client that follows the run it has just posted.

        Every other case takes the full path (``RunAccess.visible`` then ``plan_join``).

        Raises:
            RunNotFound: as :meth:`RunAccess.visible`.
        """
        if not RUN_ID.match(run_id):
            raise RunNotFound(f"no run {run_id[:80]!r}")
        shard = self.access.shard_of(run_id)
        joined = await self.events.join_state(run_id, shard)
        state, ttl_ms = joined.stream, joined.owner_ttl_ms
        if joined.owner == owner_value(who.tenant_id, who.subject):
            if state.exists:
                # (An existing stream's needs_snapshot does not look at the record.)
                follow = _id(state.last_id) > _id(after) and not needs_snapshot(state, after, None)
            else:
                age_ms = self.run_ttl_s * 1000 - int(ttl_ms)
                fresh_ms = min(FRESH_RUN_S, self.events_ttl_s) * 1000
                follow = int(ttl_ms) > 0 and age_ms < fresh_ms
            if follow:
                return RunRef(run_id, shard, None, who.subject), JoinPlan(None, after)
        # The record is read after the owner key, and the stream's state after the record, as
        # plan_join always did: a run that ended meanwhile is seen ended, not half way.
        ref = await self.access.visible(who, run_id, read=read)
        return ref, await plan_join(self.events, ref, after)


def _plan(ref: RunRef, state: StreamState, after: str) -> JoinPlan:
    record = ref.record
    over = record is not None and record.is_terminal
    if needs_snapshot(state, after, record) or (over and _id(state.last_id) <= _id(after)):
        snapshot = {
            "type": "snapshot",
            "run_id": ref.run_id,
            "last_event_id": state.last_id,
            "run": describe(ref.run_id, record).model_dump(mode="json"),
        }
        return JoinPlan(snapshot, None if over else state.last_id)
    return JoinPlan(None, after)
