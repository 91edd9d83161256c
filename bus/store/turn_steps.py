"""The steps of the conversation turn queue (`bus.store.turns`), each run on the connection of
the one transaction that holds the conversation's lock (`lock_conversation` takes it).

They read and change the turn rows (and, when a run a later question cancelled ends, the
conversation's messages); none of them commits: `TurnStore` runs them inside one group-commit
transaction, so what they decide together is written together.
"""

from __future__ import annotations

import time
from typing import Any

from sqlalchemy import Connection, Table, and_, bindparam, delete, func, insert, select, update
from sqlalchemy.dialects import postgresql

from bus.events import TERMINAL_STATUSES, RunStatus
from bus.store.conversations import MessageRole, append_sync
from bus.store.repository import utcnow
from bus.store.scope import Scope
from bus.store.tables import ConversationRow, MessageRow, RunRow
from bus.store.turn_tables import ConversationLockRow, TurnRow
from bus.store.turn_types import INTERRUPTED, FirstTurn, Turn, TurnState

_TURNS: Table = TurnRow.__table__  # pyright: ignore[reportAssignmentType]
_LOCKS: Table = ConversationLockRow.__table__  # pyright: ignore[reportAssignmentType]
_MESSAGES: Table = MessageRow.__table__  # pyright: ignore[reportAssignmentType]
_RUNS: Table = RunRow.__table__  # pyright: ignore[reportAssignmentType]
_ENDED = sorted(s.value for s in TERMINAL_STATUSES)
_WAITING = _TURNS.alias("waiting")
_RUNNING = _TURNS.alias("running")
#: Promote the conversation's oldest queued turn, unless one runs; the turn as promoted.
_PROMOTE = (
    update(_TURNS)
    .where(
        _TURNS.c.id
        == select(func.min(_WAITING.c.id))
        .where(
            _WAITING.c.conversation_id == bindparam("conversation_"),
            _WAITING.c.state == TurnState.QUEUED.value,
        )
        .scalar_subquery(),
        ~select(_RUNNING.c.id)
        .where(
            _RUNNING.c.conversation_id == bindparam("conversation_"),
            _RUNNING.c.state == TurnState.RUNNING.value,
        )
        .exists(),
    )
    .values(
        state=TurnState.RUNNING.value,
        running_until=bindparam("now_") + _TURNS.c.timeout_s,
        updated_at=bindparam("updated_"),
    )
    .returning(*_TURNS.c)
)
#: A conversation's lock row, unless it has one (Postgres; the row is the parameters).
_NEW_LOCK_ROW = (
    postgresql.insert(_LOCKS)
    .on_conflict_do_nothing(index_elements=[_LOCKS.c.conversation_id])
    .returning(_LOCKS.c.conversation_id)
)
#: End a running (or queued) turn of the owner's, in the conversation the caller locked;
#: the turn as it was, for what its end leaves in the history.
_END_RUNNING = (
    update(_TURNS)
    .where(
        _TURNS.c.run_id == bindparam("run_id_"),
        _TURNS.c.tenant_id == bindparam("tenant_"),
        _TURNS.c.subject == bindparam("subject_"),
        _TURNS.c.conversation_id == bindparam("conversation_"),
        _TURNS.c.state != TurnState.ENDED.value,
    )
    .values(state=TurnState.ENDED.value, updated_at=bindparam("updated_"))
    .returning(*_TURNS.c)
)


def lock_conversation(conn: Connection, owner: Scope, conversation_id: str) -> bool:
    """Lock the conversation's row (the owner's only); whether there was one."""
    stmt = (
        update(_LOCKS)
        .where(
            _LOCKS.c.conversation_id == conversation_id,
            _LOCKS.c.tenant_id == owner.tenant_id,
            _LOCKS.c.subject == owner.subject,
        )
        .values(version=_LOCKS.c.version + 1)
        .returning(_LOCKS.c.conversation_id)
    )
    return conn.execute(stmt).first() is not None


def lock_for_end(conn: Connection, owner: Scope, conversation_id: str) -> bool:
    """Lock the conversation's row (the owner's only) for a run's end; whether there was
    one, so the run's turn may be SQL's (`end_run_turn`).

    A conversation whose first turn is Redis's (`bus.first_turns`) has no row yet. An end
    that locked nothing then could interleave with an admission on another connection: the
    admission reads the run's row before the end writes it, adopts the run's turn as
    running (`adopt_first_turn`) and queues its question behind a turn no end closes (the
    sweeper's pass does, much later). So on Postgres the end writes the row itself: an
    admission under way makes it wait for that admission's commit (and then it locks the
    row and ends the adopted turn), and an admission that comes later waits for the end's
    commit and finds the run ended. SQLite needs no row: the end's first statement takes
    the database's one write lock, which no admission can interleave with.
    """
    if lock_conversation(conn, owner, conversation_id):
        return True
    if conn.dialect.name == "sqlite":
        return False
    row = {"conversation_id": conversation_id, "tenant_id": owner.tenant_id,
           "subject": owner.subject, "version": 0}  # fmt: skip
    if conn.execute(_NEW_LOCK_ROW, row).first() is not None:
        return False  # written now: nothing of the conversation's turns is SQL's
    return lock_conversation(conn, owner, conversation_id)  # an admission's, just committed


def select_owned_turn(owner: Scope, run_id: str) -> Any:
    """The query for the run's turn, if the run is the owner's."""
    return select(_TURNS).where(
        _TURNS.c.run_id == run_id,
        _TURNS.c.tenant_id == owner.tenant_id,
        _TURNS.c.subject == owner.subject,
    )


def adopt_first_turn(conn: Connection, conversation_id: str, first: FirstTurn) -> None:
    """Write the conversation's first turn, which only Redis holds, as the running turn it
    is, unless SQL has it already or its run has ended.

    Its run's row is read ``FOR UPDATE`` (Postgres): a run end committing meanwhile is
    seen, or waits for this transaction and then finds the turn it ends. Its ``publish`` is
    empty: the run was published with the record this reads, so nobody publishes it again.
    """
    mine = select(_TURNS.c.id).where(_TURNS.c.run_id == first.run_id)
    if conn.execute(mine).first() is not None:
        return
    ran = select(_RUNS.c.status).where(_RUNS.c.id == first.run_id).with_for_update()
    if conn.execute(ran).scalar() in _ENDED:
        return
    values = turn_values(
        first.owner, conversation_id, first.run_id, first.question, "", first.timeout_s
    )
    values |= {"state": TurnState.RUNNING.value, "running_until": first.running_until}
    conn.execute(insert(_TURNS), values)


def live_turns(conn: Connection, conversation_id: str) -> list[Turn]:
    """The conversation's running and queued turns, in the order they were asked."""
    rows = (
        conn.execute(
            select(_TURNS)
            .where(
                _TURNS.c.conversation_id == conversation_id,
                _TURNS.c.state != TurnState.ENDED.value,
            )
            .order_by(_TURNS.c.id)
        )
        .mappings()
        .all()
    )
    return [turn_of(r) for r in rows]


def running_turn(conn: Connection, conversation_id: str) -> Turn | None:
    """The conversation's running turn, if one runs."""
    live = live_turns(conn, conversation_id)
    return next((t for t in live if t.state == TurnState.RUNNING), None)


def expire_stale(conn: Connection, conversation_id: str, now: float) -> Turn | None:
    """End a running turn past its deadline; the turn promoted in its place, if any."""
    conn.execute(
        update(_TURNS)
        .where(
            _TURNS.c.conversation_id == conversation_id,
            _TURNS.c.state == TurnState.RUNNING.value,
            _TURNS.c.running_until < now,
        )
        .values(state=TurnState.ENDED.value, updated_at=utcnow())
    )
    return advance(conn, conversation_id, now)


def advance(conn: Connection, conversation_id: str, now: float) -> Turn | None:
    """Promote the oldest queued turn if nothing runs; the promoted turn, if any (one
    statement: the choice, the check and the promotion)."""
    params = {"conversation_": conversation_id, "now_": now, "updated_": utcnow()}
    row = conn.execute(_PROMOTE, params).mappings().first()
    return None if row is None else turn_of(row)


def end_run_turn(
    conn: Connection,
    owner: Scope,
    conversation_id: str,
    run_id: str,
    status: RunStatus,
    partial: str | None,
) -> Turn | None:
    """End the run's turn, in the transaction that ends the run, and promote the next one.

    The caller holds the conversation's lock (`lock_for_end`), taken before it wrote the
    run's row, as an admission takes it before it reads that row (`adopt_first_turn`):
    both lock in one order. (A conversation that had no lock row has no turn in SQL: its
    first turn is Redis's, `bus.first_turns`, and nothing waits behind it; the caller does
    not call this then.)

    Returns:
        The conversation's running turn to publish: the one promoted now, or, when the
        turn had ended before (a redelivered end), the one running since; None when
        nothing waits or the run has no turn.
    """
    params = {
        "run_id_": run_id,
        "tenant_": owner.tenant_id,
        "subject_": owner.subject,
        "conversation_": conversation_id,
        "updated_": utcnow(),
    }
    row = conn.execute(_END_RUNNING, params).mappings().first()
    if row is None:  # no turn, or ended before: what runs now is published again (a no-op)
        mine = select(_TURNS.c.id).where(_TURNS.c.run_id == run_id)
        return None if conn.execute(mine).first() is None else running_turn(conn, conversation_id)
    keep_history(conn, turn_of(row), status, partial)
    return advance(conn, conversation_id, time.time())


def end_turn(conn: Connection, turn: Turn, status: RunStatus, partial: str | None) -> None:
    """End the turn; keep an interrupted run's question and partial answer, or roll back
    a rolled-back run's messages."""
    conn.execute(
        update(_TURNS)
        .where(_TURNS.c.run_id == turn.run_id)
        .values(state=TurnState.ENDED.value, updated_at=utcnow())
    )
    keep_history(conn, turn, status, partial)


def keep_history(conn: Connection, turn: Turn, status: RunStatus, partial: str | None) -> None:
    """What an ended turn's run leaves in the history: an interrupted run's question and
    partial answer, or none of a rolled-back run's messages."""
    mine = and_(
        _MESSAGES.c.conversation_id == turn.conversation_id,
        _MESSAGES.c.tenant_id == turn.tenant_id,
        _MESSAGES.c.run_id == turn.run_id,
    )
    if turn.disposition == "rollback":
        roll_back(conn, turn, mine)
        return
    if turn.disposition != "interrupt" or status == RunStatus.DONE:
        return
    exists = conn.execute(
        select(func.count())
        .select_from(ConversationRow)
        .where(ConversationRow.id == turn.conversation_id)
    ).scalar()
    if not exists:  # cancelled before its intake made the conversation: nothing to keep
        return
    cid, owner = turn.conversation_id, turn.owner
    asked = append_sync(
        conn, owner, cid, MessageRole.USER, turn.question, turn.run_id,
        parent_id=turn.parent_message_id,
    )  # fmt: skip
    append_sync(
        conn, owner, cid, MessageRole.ASSISTANT, partial or "", turn.run_id,
        parent_id=asked, status=INTERRUPTED,
    )  # fmt: skip


def roll_back(conn: Connection, turn: Turn, mine: Any) -> None:
    """Delete the run's messages; the active branch goes back to where the run began."""
    rows = conn.execute(select(_MESSAGES.c.id, _MESSAGES.c.parent_id, _MESSAGES.c.role).where(mine))
    found = [(r.id, r.parent_id, r.role) for r in rows]
    if not found:
        return
    began = next((parent for _, parent, role in found if role == MessageRole.USER.value), None)
    conn.execute(delete(_MESSAGES).where(mine))
    conn.execute(
        update(ConversationRow)
        .where(
            ConversationRow.id == turn.conversation_id,
            ConversationRow.active_message_id.in_([i for i, _, _ in found]),
        )
        .values(active_message_id=began)
    )


def turn_values(
    owner: Scope,
    conversation_id: str,
    run_id: str,
    question: str,
    publish: str,
    timeout_s: float,
) -> dict[str, Any]:
    """A new turn's row, before its state is decided."""
    now = utcnow()
    return {
        "run_id": run_id,
        "conversation_id": conversation_id,
        "tenant_id": owner.tenant_id,
        "subject": owner.subject,
        "question": question,
        "publish": publish,
        "timeout_s": timeout_s,
        "created_at": now,
        "updated_at": now,
    }


def queued_run_values(
    owner: Scope, run_id: str, question: str, conversation_id: str, mode: str
) -> dict[str, Any]:
    """The run's record while it waits: ``queued``, visible to its owner at once."""
    now = utcnow()
    return {
        "id": run_id,
        "tenant_id": owner.tenant_id,
        "subject": owner.subject,
        "status": RunStatus.QUEUED.value,
        "mode": mode,
        "question": question,
        "conversation_id": conversation_id,
        "created_at": now,
        "updated_at": now,
    }


def turn_of(row: Any) -> Turn:
    """A turn row as a `Turn`."""
    return Turn(
        run_id=row["run_id"],
        conversation_id=row["conversation_id"],
        tenant_id=row["tenant_id"],
        subject=row["subject"],
        state=TurnState(row["state"]),
        question=row["question"],
        publish=row["publish"],
        timeout_s=float(row["timeout_s"]),
        running_until=row["running_until"],
        disposition=row["disposition"],
        parent_message_id=row["parent_message_id"],
    )
