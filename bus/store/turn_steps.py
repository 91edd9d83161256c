"""The steps of the conversation turn queue (`bus.store.turns`), each run on the connection of
the one transaction that holds the conversation's lock (`lock_conversation` takes it).

They read and change the turn rows (and, when a run a later question cancelled ends, the
conversation's messages); none of them commits: `TurnStore` runs them inside one group-commit
transaction, so what they decide together is written together.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, Table, and_, delete, func, insert, select, update

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
    """Promote the oldest queued turn if nothing runs; the promoted turn, if any."""
    live = live_turns(conn, conversation_id)
    if not live or any(t.state == TurnState.RUNNING for t in live):
        return None
    first = live[0]
    until = now + first.timeout_s
    conn.execute(
        update(_TURNS)
        .where(_TURNS.c.run_id == first.run_id)
        .values(state=TurnState.RUNNING.value, running_until=until, updated_at=utcnow())
    )
    return Turn(
        first.run_id,
        first.conversation_id,
        first.tenant_id,
        first.subject,
        TurnState.RUNNING,
        first.question,
        first.publish,
        first.timeout_s,
        until,
        first.disposition,
        first.parent_message_id,
    )


def end_turn(conn: Connection, turn: Turn, status: RunStatus, partial: str | None) -> None:
    """End the turn; keep an interrupted run's question and partial answer, or roll back
    a rolled-back run's messages."""
    conn.execute(
        update(_TURNS)
        .where(_TURNS.c.run_id == turn.run_id)
        .values(state=TurnState.ENDED.value, updated_at=utcnow())
    )
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
