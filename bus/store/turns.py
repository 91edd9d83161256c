"""Conversation turns: at most one run of a conversation runs at a time; the others wait.

A question that arrives while its conversation has a run in flight is decided by the
``multitask`` policy (`bus.run_state.Multitask`): ``enqueue`` it, ``reject`` it
(`ConversationBusy`, nothing written), or cancel the running run and queue the new one
behind it, keeping the cancelled run's partial answer marked ``interrupted``
(``interrupt``) or removing the cancelled run from the history (``rollback``).

Every decision about a conversation's turns runs in one transaction that first locks the
conversation's row in ``conversation_locks``: a row lock on Postgres, SQLite's write lock
(taken by that first UPDATE), so two API replicas, or an admission racing a run's end,
decide one after the other. The queue is rows in SQL, each with what publishes its run, so
a queued question survives a restart of every process: it is promoted (``running``) in the
same transaction that ends the run before it, and whoever promotes it publishes it with the
publish-once script (a second publish of the same run id is a no-op). A promotion whose
publish was lost (a crash between the commit and the publish) is found again by the
sweeper (`TurnStore.due`), as is a running turn past its deadline whose end was never
recorded.

What the queue hands out (`Turn`, `Admission`, ...) is in `bus.store.turn_types`, and the
steps each decision runs under the lock in `bus.store.turn_steps`; the types are importable
from here too.
"""

from __future__ import annotations

import builtins
import time
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Connection, Table, and_, insert, or_, select, update

from bus.errors import StoreError
from bus.events import TERMINAL_STATUSES, RunStatus
from bus.run_state import Multitask
from bus.store.conversations import ConversationNotFound
from bus.store.repository import Dialects, Repository, utcnow
from bus.store.scope import Scope, apply_scope_sync
from bus.store.tables import RunRow
from bus.store.turn_steps import (
    adopt_first_turn,
    advance,
    end_turn,
    expire_stale,
    live_turns,
    lock_conversation,
    queued_run_values,
    running_turn,
    select_owned_turn,
    turn_of,
    turn_values,
)
from bus.store.turn_tables import ConversationLockRow, TurnRow
from bus.store.turn_types import (
    CANCELLED_BY,
    INTERRUPTED,
    Admission,
    ConversationBusy,
    FirstTurn,
    Turn,
    TurnState,
)
from bus.transcript import partial_answer

__all__ = [
    "CANCELLED_BY",
    "INTERRUPTED",
    "Admission",
    "ConversationBusy",
    "FirstTurn",
    "Turn",
    "TurnState",
    "TurnStore",
]

_TURNS: Table = TurnRow.__table__  # pyright: ignore[reportAssignmentType]
_RUNS: Table = RunRow.__table__  # pyright: ignore[reportAssignmentType]
_INSERT_TURN = insert(_TURNS)
_ENDED = sorted(s.value for s in TERMINAL_STATUSES)
#: ``INSERT ... ON CONFLICT DO NOTHING`` of a conversation's lock row and of a queued run's
#: row, by SQL dialect; the rows are passed as parameters.
_LOCK = Dialects(ConversationLockRow, ["conversation_id"])
_QUEUED_RUN = Dialects(RunRow, ["id"])


class TurnStore(Repository):
    """Admits questions into conversations and hands the next one over as each run ends."""

    async def admit(
        self,
        owner: Scope,
        conversation_id: str,
        run_id: str,
        question: str,
        *,
        publish: str,
        timeout_s: float,
        policy: Multitask,
        mode: str,
        parent_message_id: int | None = None,
        fresh: bool = False,
        first: FirstTurn | None = None,
    ) -> Admission:
        """Decide, under the conversation's lock, whether the run starts now or waits.

        Args:
            owner: the user asking (the conversation's owner, or its first asker).
            conversation_id: the conversation.
            run_id: the new run.
            question: its question (kept for an interrupted turn's history).
            publish: how to publish the run (JSON; see `api.app.turn_publisher`).
            timeout_s: the run's time budget, counted from when it starts.
            policy: what to do if the conversation is busy.
            mode: the run's mode (for the queued run's record).
            parent_message_id: the message the question follows (None: the end of the
                active branch when it starts; 0: the conversation's start).
            fresh: the conversation id was drawn for this run just now (the caller named
                none, and this is no replay): no turn can exist yet, so the run's turn
                and the conversation's owner are written without reading anything.
            first: the conversation's first turn as Redis holds it (its run was published
                with it, and SQL may hold nothing of it): written here as running unless
                its run has ended; a question of another user is not admitted.

        Raises:
            ConversationBusy: busy, and the policy is ``reject``; nothing was written.
            ConversationNotFound: another user's or tenant's conversation has this id.
            StoreError: the database failed.
        """
        group = self._group_commit()
        # Statements built once, the row as parameters: building an INSERT with its values
        # (and the cache key over them) cost more CPU than the SQL it sends.
        lock, queued_run = _LOCK.get(group.dialect), _QUEUED_RUN.get(group.dialect)
        lock_row = {
            "conversation_id": conversation_id,
            "tenant_id": owner.tenant_id,
            "subject": owner.subject,
            "version": 0,
        }

        def start(conn: Connection) -> Admission:
            apply_scope_sync(conn, owner)
            conn.execute(lock, lock_row)
            values = turn_values(owner, conversation_id, run_id, question, publish, timeout_s)
            values |= {
                "parent_message_id": parent_message_id,
                "state": TurnState.RUNNING.value,
                "running_until": time.time() + timeout_s,
            }
            conn.execute(_INSERT_TURN, values)
            return Admission(TurnState.RUNNING)

        def work(conn: Connection) -> Admission:
            apply_scope_sync(conn, owner)
            if first is not None and (first.tenant_id, first.subject) != (
                owner.tenant_id,
                owner.subject,
            ):
                raise ConversationNotFound(f"no conversation {conversation_id!r}")
            conn.execute(lock, lock_row)
            if not lock_conversation(conn, owner, conversation_id):
                raise ConversationNotFound(f"no conversation {conversation_id!r}")
            mine = select(_TURNS).where(_TURNS.c.run_id == run_id)
            earlier = conn.execute(mine).mappings().first()
            if earlier is not None:
                turn = turn_of(earlier)
                if turn.subject != owner.subject or turn.conversation_id != conversation_id:
                    raise StoreError(f"run {run_id!r} already exists")
                return Admission(turn.state, replayed=True)
            if first is not None:
                if first.run_id == run_id:  # published with its first turn: a retry
                    return Admission(TurnState.RUNNING, replayed=True)
                adopt_first_turn(conn, conversation_id, first)
            now = time.time()
            promoted = expire_stale(conn, conversation_id, now)
            live = live_turns(conn, conversation_id)
            running = next((t for t in live if t.state == TurnState.RUNNING), None)
            values = turn_values(owner, conversation_id, run_id, question, publish, timeout_s)
            values["parent_message_id"] = parent_message_id
            if running is None:
                values |= {"state": TurnState.RUNNING.value, "running_until": now + timeout_s}
                conn.execute(_INSERT_TURN, values)
                return Admission(TurnState.RUNNING, promoted=promoted)
            if policy == "reject":
                raise ConversationBusy(
                    f"conversation {conversation_id!r} has a run in flight ({running.run_id})"
                )
            cancel = None
            if policy in ("interrupt", "rollback"):
                conn.execute(
                    update(_TURNS)
                    .where(_TURNS.c.run_id == running.run_id)
                    .values(disposition=policy, updated_at=utcnow())
                )
                cancel = running.run_id
            conn.execute(_INSERT_TURN, values | {"state": TurnState.QUEUED.value})
            conn.execute(
                queued_run, queued_run_values(owner, run_id, question, conversation_id, mode)
            )
            return Admission(TurnState.QUEUED, len(live), cancel, promoted)

        return await group.run(start if fresh else work, "admit the question")

    async def finish(
        self, owner: Scope, run_id: str, status: RunStatus, partial: str | None
    ) -> Turn | None:
        """End the run's turn (idempotent) and promote the next one of its conversation.

        ``interrupt`` keeps the cancelled run's question and its partial answer (marked
        ``interrupted``) in the history; ``rollback`` removes the run's messages.

        Returns:
            The conversation's running turn to publish (the one promoted now, or, when the
            turn had ended already, the one promoted then: publishing again is a no-op), or
            None (nothing waits, or the run has no turn).
        """
        group = self._group_commit()

        def work(conn: Connection) -> Turn | None:
            apply_scope_sync(conn, owner)
            row = conn.execute(select_owned_turn(owner, run_id)).mappings().first()
            if row is None:
                return None
            turn = turn_of(row)
            lock_conversation(conn, owner, turn.conversation_id)
            if turn.state == TurnState.ENDED:
                return running_turn(conn, turn.conversation_id)
            end_turn(conn, turn, status, partial)
            return advance(conn, turn.conversation_id, time.time())

        return await group.run(work, "end the conversation turn")

    async def due(self, grace_s: float) -> builtins.list[Turn]:
        """For the sweeper: running turns to publish (again), every tenant's.

        Ends each running turn whose run has ended in the store (the run-end hook failed)
        or is past its deadline (its end was never recorded), promoting what waited behind
        it; a running turn whose run has not reached intake ``grace_s`` after it was
        promoted or admitted is returned too, to be published again (a no-op when the first
        publish happened).
        """
        now = time.time()
        operator = Scope.operator()
        found: builtins.list[Turn] = []
        cutoff = datetime.fromtimestamp(now - grace_s, UTC)
        for turn, status, trace in await self._ended(operator, cutoff):
            promoted = await self.finish(turn.owner, turn.run_id, status, partial_answer(trace))
            if promoted is not None:
                found.append(promoted)
        stale = await self._scan(
            operator,
            and_(_TURNS.c.state == TurnState.RUNNING.value, _TURNS.c.running_until < now),
        )
        group = self._group_commit()
        for turn in stale:

            def work(conn: Connection, turn: Turn = turn) -> Turn | None:
                apply_scope_sync(conn, turn.owner)
                lock_conversation(conn, turn.owner, turn.conversation_id)
                expire_stale(conn, turn.conversation_id, time.time())
                return running_turn(conn, turn.conversation_id)

            promoted = await group.run(work, "expire a stale turn")
            if promoted is not None:
                found.append(promoted)
        unstarted = await self._unstarted(operator, now - grace_s)
        seen = {t.run_id for t in found}
        return found + [t for t in unstarted if t.run_id not in seen]

    async def _ended(
        self, scope: Scope, cutoff: datetime
    ) -> builtins.list[tuple[Turn, RunStatus, Any]]:
        """Running turns whose run ended in the store before ``cutoff`` (the hook that
        should have ended the turn had time to run; a sweep must not overtake it)."""
        stmt = (
            select(_TURNS, _RUNS.c.status.label("run_status"), _RUNS.c.trace.label("run_trace"))
            .join(_RUNS, _RUNS.c.id == _TURNS.c.run_id)
            .where(
                _TURNS.c.state == TurnState.RUNNING.value,
                _RUNS.c.status.in_(sorted(s.value for s in TERMINAL_STATUSES)),
                _RUNS.c.finished_at < cutoff,
            )
            .limit(500)
        )
        async with self._scoped(scope, "read the conversation turns") as session:
            rows = (await session.execute(stmt)).mappings().all()
        return [(turn_of(r), RunStatus(r["run_status"]), r["run_trace"]) for r in rows]

    async def _scan(self, scope: Scope, where: Any) -> builtins.list[Turn]:
        async with self._scoped(scope, "read the conversation turns") as session:
            rows = (await session.execute(select(_TURNS).where(where).limit(500))).mappings().all()
        return [turn_of(r) for r in rows]

    async def _unstarted(self, scope: Scope, before: float) -> builtins.list[Turn]:
        cutoff = datetime.fromtimestamp(before, UTC)
        stmt = (
            select(_TURNS)
            .outerjoin(_RUNS, _RUNS.c.id == _TURNS.c.run_id)
            .where(
                _TURNS.c.state == TurnState.RUNNING.value,
                _TURNS.c.updated_at < cutoff,
                or_(_RUNS.c.id.is_(None), _RUNS.c.status == RunStatus.QUEUED.value),
            )
            .limit(500)
        )
        async with self._scoped(scope, "read the conversation turns") as session:
            rows = (await session.execute(stmt)).mappings().all()
        return [turn_of(r) for r in rows]

    async def cancelled_by(self, owner: Scope, run_id: str) -> str | None:
        """Why a later question cancelled the run (``interrupted``, ``rolled_back``), or None."""
        stmt = select(_TURNS.c.disposition).where(
            _TURNS.c.run_id == run_id,
            _TURNS.c.tenant_id == owner.tenant_id,
            _TURNS.c.subject == owner.subject,
        )
        async with self._scoped(owner, "read the conversation turn") as session:
            disposition = (await session.execute(stmt)).scalar()
        return CANCELLED_BY.get(disposition or "")

    async def waiting(
        self, scope: Scope, conversation_id: str, first: FirstTurn | None = None
    ) -> builtins.list[Turn]:
        """The conversation's running and queued turns, in the order they were asked.

        ``first``: its first turn as Redis holds it (`admit`), running first of all while
        SQL has no turn of it and its run has not ended (and the caller may see it).
        """
        where = and_(
            _TURNS.c.conversation_id == conversation_id,
            _TURNS.c.state != TurnState.ENDED.value,
            scope.where(_TURNS),
        )
        async with self._scoped(scope, "read the conversation turns") as session:
            stmt = select(_TURNS).where(where).order_by(_TURNS.c.id)
            found = [turn_of(r) for r in (await session.execute(stmt)).mappings().all()]
            if first is None or not scope.sees(first.tenant_id, first.subject):
                return found
            mine = select(_TURNS.c.id).where(_TURNS.c.run_id == first.run_id)
            ran = select(_RUNS.c.status).where(_RUNS.c.id == first.run_id)
            if (await session.execute(mine)).first() is not None or (
                await session.execute(ran)
            ).scalar() in _ENDED:
                return found
        running = Turn(
            first.run_id, conversation_id, first.tenant_id, first.subject, TurnState.RUNNING,
            first.question, "", first.timeout_s, first.running_until, None,
        )  # fmt: skip
        return [running, *found]
