"""The runs repository: every read is scoped to a user (or a tenant admin), every write is
idempotent and made by the run's owner."""

from __future__ import annotations

import builtins
import functools
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, NamedTuple

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, field_validator
from sqlalchemy import (
    ColumnClause,
    Connection,
    String,
    Table,
    Update,
    and_,
    bindparam,
    literal_column,
    or_,
    select,
    update,
)
from sqlalchemy.exc import IntegrityError

from bus.errors import StoreError
from bus.events import TERMINAL_STATUSES, RunStatus
from bus.store.conversations import append_exchange_sync
from bus.store.group_commit import Prepared
from bus.store.repository import Repository, insert_ignoring, utcnow
from bus.store.run_query import RunCursor, RunQuery, count_statement, page_statement
from bus.store.scope import Scope, apply_scope_sync
from bus.store.tables import RunRow
from bus.store.turn_steps import end_run_turn, lock_for_end
from bus.store.turn_types import TurnEnd

__all__ = ["TERMINAL_STATUSES", "Exchange", "RunRecord", "RunStatus", "RunStore", "utcnow"]


_TERMINAL_VALUES = sorted(status.value for status in TERMINAL_STATUSES)
# The terminal statuses as SQL literals: a list of values would be an "expanding" parameter,
# which SQLAlchemy rewrites into the statement on every execution (the run path's two
# updates). These are our own constants, never user input.
_TERMINAL_SQL: list[ColumnClause[str]] = [
    literal_column(f"'{value}'", String) for value in _TERMINAL_VALUES
]
_RUNS: Table = RunRow.__table__  # pyright: ignore[reportAssignmentType]


class RunRecord(BaseModel):
    """A run as the store holds it; immutable, detached from any database session."""

    model_config = ConfigDict(frozen=True, from_attributes=True)

    id: str = Field(min_length=1, max_length=64)
    tenant_id: str = Field(min_length=1, max_length=64)
    subject: str = Field(max_length=255)
    status: RunStatus = RunStatus.QUEUED
    mode: str = Field(max_length=32)
    question: str
    answer: str | None = None
    error_code: str | None = Field(default=None, max_length=64)
    created_at: AwareDatetime = Field(default_factory=utcnow)
    updated_at: AwareDatetime = Field(default_factory=utcnow)
    finished_at: AwareDatetime | None = None
    conversation_id: str | None = Field(default=None, min_length=1, max_length=64)
    # The ordered steps of the run: reasoning, tool call, result, ..., answer.
    trace: list[dict[str, Any]] | None = None
    # Token counts of the whole run, such as {"input_tokens": 812, "output_tokens": 95}.
    usage: dict[str, int] | None = None
    # What the judges concluded: True, False, or None (unknown, or not judged).
    verified: bool | None = None
    verified_reason: str | None = None

    @field_validator("created_at", "updated_at", "finished_at")
    @classmethod
    def _in_utc(cls, value: datetime | None) -> datetime | None:
        # One zone everywhere, so records compare and serialise the same on every backend.
        return None if value is None else value.astimezone(UTC)

    @property
    def is_terminal(self) -> bool:
        """Whether the run has ended and can no longer change."""
        return self.status in TERMINAL_STATUSES

    @property
    def owner(self) -> Scope:
        """The scope of the user who started the run."""
        return Scope.user(self.tenant_id, self.subject)


class _Ending(NamedTuple):
    """The conversation turn a run's end also ends."""

    conversation_id: str
    status: RunStatus
    partial: str | None


class Exchange(BaseModel):
    """A run's question and answer, appended to its conversation as the run ends."""

    model_config = ConfigDict(frozen=True)

    conversation_id: str
    question: str
    answer: str
    # The message the question follows (None: the end of the active branch).
    parent_id: int | None = None


class RunStore(Repository):
    """Reads and writes runs.

    A run belongs to the user who started it: reads see it under that user's scope or a
    tenant-wide one (an admin), writes only under the owner's. To anyone else it does not
    exist, whatever its id.

    Args:
        db: an engine (the store makes its own session factory) or a session factory. The
            caller owns the engine and disposes of it.
    """

    async def create(self, run: RunRecord) -> RunRecord:
        """Insert a new run; raises ``StoreError`` if its id is taken or the database fails."""
        async with self._scoped(run.owner, "create the run") as session:
            session.add(RunRow(**(run.model_dump() | {"status": run.status.value})))
            try:
                await session.flush()
            except IntegrityError as e:
                raise StoreError(
                    f"run {run.id!r} already exists",
                    hint="run ids must be unique; read the run with get() before creating it",
                ) from e
        return run

    async def create_if_absent(self, run: RunRecord) -> tuple[RunRecord, bool]:
        """Insert a run unless its id exists; safe for a message delivered more than once.

        Concurrent calls share a transaction (group commit): this is on every run's path.

        Returns:
            The run as stored and whether this call created it. When the tenant already
            has a run with this id, that run comes back unchanged (not ``run``).

        Raises:
            StoreError: another tenant or user owns the id, or the database failed.
        """
        values = run.model_dump() | {"status": run.status.value}
        group = self._group_commit()
        owner = run.owner

        def work(conn: Connection) -> tuple[RunRecord, bool]:
            apply_scope_sync(conn, owner)
            if _insert_stmt(group.dialect).first(conn, values) is not None:
                return run, True
            row = conn.execute(_SELECT_ONE, _owner_params(owner, run.id)).mappings().first()
            if row is None:
                # Another owner's run (or deleted in between). Say no more than create()
                # would: nothing of the other run leaks.
                raise StoreError(
                    f"run {run.id!r} already exists",
                    hint="run ids must be unique; let the bus generate them",
                )
            return RunRecord.model_validate(dict(row)), False

        return await group.run(work, "create the run")

    async def get(self, scope: Scope, run_id: str) -> RunRecord | None:
        """The run with this id if ``scope`` sees it, else None (also when it is another's)."""
        async with self._scoped(scope, "read the run") as session:
            row = await session.scalar(
                select(RunRow).where(RunRow.id == run_id, scope.where(RunRow))
            )
            return None if row is None else RunRecord.model_validate(row)

    async def list(
        self, scope: Scope, limit: int = 50, before: str | None = None
    ) -> Sequence[RunRecord]:
        """The runs ``scope`` sees (a user's own, or the tenant's), newest first, by pages.

        Args:
            scope: whose runs to list.
            limit: the most runs to return (at least 1).
            before: the id of the last run of the previous page; only older runs follow.
                An id the scope does not see gives an empty page.
        """
        if limit < 1:
            raise ValueError(f"limit must be at least 1, got {limit}")
        visible = scope.where(RunRow)
        stmt = select(RunRow).where(visible)
        if before is not None:
            # A keyset cursor on (created_at, id): stable under concurrent inserts and
            # correct when several runs share a timestamp, unlike an offset or a bare time.
            cursor_at = (
                select(RunRow.created_at).where(visible, RunRow.id == before).scalar_subquery()
            )
            stmt = stmt.where(
                or_(
                    RunRow.created_at < cursor_at,
                    and_(RunRow.created_at == cursor_at, RunRow.id < before),
                )
            )
        stmt = stmt.order_by(RunRow.created_at.desc(), RunRow.id.desc()).limit(limit)
        async with self._scoped(scope, "list runs") as session:
            rows = await session.scalars(stmt)
            return [RunRecord.model_validate(row) for row in rows]

    async def find(
        self, scope: Scope, query: RunQuery, limit: int, after: RunCursor | None = None
    ) -> tuple[builtins.list[RunRecord], int]:
        """The runs ``scope`` sees that match ``query``, most recently updated first.

        Args:
            scope: whose runs to search.
            query: the filters.
            limit: the most runs to return (at least 1).
            after: where the previous page ended; only runs updated before it follow.

        Returns:
            The page, and how many runs match in all (every page together).
        """
        if limit < 1:
            raise ValueError(f"limit must be at least 1, got {limit}")
        async with self._scoped(scope, "find runs") as session:
            rows = await session.scalars(page_statement(scope, query, limit, after))
            page = [RunRecord.model_validate(row) for row in rows]
            total = await session.scalar(count_statement(scope, query))
        return page, int(total or 0)

    async def set_status(
        self,
        scope: Scope,
        run_id: str,
        status: RunStatus,
        *,
        answer: str | None = None,
        error_code: str | None = None,
    ) -> RunRecord | None:
        """Move a run to a status; a run that has ended is left exactly as it is.

        Messages arrive at least once, so a late or repeated update (``running`` after
        ``done``, ``done`` twice) must be harmless: it changes nothing and is not an error.

        Args:
            scope: the run's owner (another scope finds no run).
            run_id: the run to update.
            status: the new status; a terminal one also sets ``finished_at``.
            answer: the answer to store; None keeps the current one.
            error_code: the error code to store; None keeps the current one.

        Returns:
            The run as stored afterwards (compare its status to see whether the update
            applied), or None if there is no such run.
        """
        status, now = RunStatus(status), utcnow()
        values: dict[str, Any] = {"status": status.value, "updated_at": now}
        if answer is not None:
            values["answer"] = answer
        if error_code is not None:
            values["error_code"] = error_code
        if status in TERMINAL_STATUSES:
            values["finished_at"] = now
        return await self._update_unless_ended(scope, run_id, values, "update the run status")

    async def end(
        self,
        scope: Scope,
        run_id: str,
        status: RunStatus,
        *,
        answer: str | None,
        trace: builtins.list[dict[str, Any]] | None,
        usage: dict[str, int] | None,
        error_code: str | None = None,
        verified: bool | None = None,
        verified_reason: str | None = None,
    ) -> bool:
        """End a run and record what it leaves behind, all in one update.

        The finalizer's write, on every run's path, so it does not read the run back.
        Guarded like ``set_status``: a run that has already ended is left exactly as it is,
        so a redelivered finalizer changes nothing.

        Args:
            scope: the run's owner (another scope finds no run).
            run_id: the run to end.
            status: a terminal status.
            answer: the final answer; None keeps the current one.
            trace: the ordered steps of the run; None keeps the current one.
            usage: the run's token counts; None keeps the current ones.
            error_code: why the run failed; None keeps the current one.
            verified: what the judges concluded (None: unknown or not judged).
            verified_reason: why (None keeps the current one).

        Returns:
            Whether this call ended the run (False: unknown, or it had already ended).

        Raises:
            ValueError: ``status`` is not terminal.
            StoreError: the database failed.
        """
        values = _end_values(status, answer, trace, usage, error_code)
        judged = {"verified": verified, "verified_reason": verified_reason}
        values |= {k: v for k, v in judged.items() if v is not None}
        ended, _ = await self._end(scope, run_id, values, None, None)
        return ended

    async def end_turn(
        self,
        scope: Scope,
        run_id: str,
        status: RunStatus,
        conversation_id: str,
        *,
        answer: str | None,
        trace: builtins.list[dict[str, Any]] | None,
        usage: dict[str, int] | None,
        error_code: str | None = None,
        verified: bool | None = None,
        verified_reason: str | None = None,
        partial: str | None = None,
    ) -> TurnEnd:
        """`end` a run of a conversation and its turn, in one transaction; the turn that
        runs next in the conversation, for the caller to publish.

        A turn cancelled by a later question (``interrupt``) keeps ``partial``, what the
        run streamed of its answer; a ``rollback`` removes the run's messages. A
        redelivered end changes nothing and names the running turn again.

        Raises:
            ValueError: ``status`` is not terminal.
            StoreError: the database failed.
        """
        values = _end_values(status, answer, trace, usage, error_code)
        judged = {"verified": verified, "verified_reason": verified_reason}
        values |= {k: v for k, v in judged.items() if v is not None}
        ending = _Ending(conversation_id, RunStatus(status), partial)
        _, turn = await self._end(scope, run_id, values, None, ending)
        return turn or TurnEnd()

    async def end_answered(
        self,
        scope: Scope,
        run_id: str,
        exchange: Exchange,
        *,
        trace: builtins.list[dict[str, Any]] | None,
        usage: dict[str, int] | None,
        verified: bool | None = None,
        verified_reason: str | None = None,
    ) -> TurnEnd:
        """`end` a run ``done`` with its answer, append its question and answer to its
        conversation and end its turn there, in one transaction.

        The history holds the answer exactly when the run reads as done, and the turn that
        runs next (returned, for the caller to publish) sees it. Appends are idempotent per
        run and role and the end is guarded, so a redelivered finalizer changes nothing
        and names the same next turn (publishing it again is a no-op).

        Returns:
            The turn to publish now, if any, and the id of the question's message.

        Raises:
            ConversationNotFound: the owner has no such conversation (nothing was written).
            StoreError: the database failed.
        """
        values = _end_values(RunStatus.DONE, exchange.answer, trace, usage, None)
        judged = {"verified": verified, "verified_reason": verified_reason}
        values |= {k: v for k, v in judged.items() if v is not None}
        ending = _Ending(exchange.conversation_id, RunStatus.DONE, None)
        _, turn = await self._end(scope, run_id, values, exchange, ending)
        assert turn is not None and turn.asked is not None  # an exchange's question is kept
        return turn

    async def _end(
        self,
        scope: Scope,
        run_id: str,
        values: dict[str, Any],
        exchange: Exchange | None,
        ending: _Ending | None,
    ) -> tuple[bool, TurnEnd | None]:
        stmt = _end_stmt(tuple(sorted(values)))
        params = {f"v_{k}": v for k, v in values.items()} | _owner_params(scope, run_id)

        def work(conn: Connection) -> tuple[bool, TurnEnd | None]:
            apply_scope_sync(conn, scope)
            # The conversation's lock first (`end_run_turn`), as an admission takes it.
            locked = ending is not None and lock_for_end(conn, scope, ending.conversation_id)
            asked = None
            if exchange is not None:  # the messages first: the history, then the end
                asked = append_exchange_sync(
                    conn,
                    scope,
                    exchange.conversation_id,
                    run_id,
                    exchange.question,
                    exchange.answer,
                    parent_id=exchange.parent_id,
                )
            ended = stmt.rowcount(conn, params) == 1
            if ending is None:
                return ended, None
            cid, status, partial = ending
            following = end_run_turn(conn, scope, cid, run_id, status, partial) if locked else None
            return ended, TurnEnd(following, asked)

        return await self._group_commit().run(work, "finish the run")

    async def _update_unless_ended(
        self, scope: Scope, run_id: str, values: dict[str, Any], action: str
    ) -> RunRecord | None:
        # The terminal check lives in the UPDATE's WHERE, so two workers racing to end the
        # same run cannot both win: whichever commits first sticks. Group-committed: every
        # run's status changes (intake's ``running``, the run-end hook) come through here.
        stmt = _update_stmt(tuple(sorted(values)))
        params = {f"v_{k}": v for k, v in values.items()} | _owner_params(scope, run_id)

        def work(conn: Connection) -> RunRecord | None:
            apply_scope_sync(conn, scope)
            row = conn.execute(stmt, params).mappings().first()
            if row is None:  # not updated: unknown, another's, or already ended
                row = conn.execute(_SELECT_ONE, _owner_params(scope, run_id)).mappings().first()
            return None if row is None else RunRecord.model_validate(dict(row))

        return await self._group_commit().run(work, action)


# The run path's statements are built once, with bound parameters, so each execution
# reuses its compiled form instead of building and cache-keying a new statement.
# Writes and their read-backs are the owner's: the tenant and subject are in every WHERE.
_OWNED = and_(
    _RUNS.c.id == bindparam("run_id_"),
    _RUNS.c.tenant_id == bindparam("owner_tenant_"),
    _RUNS.c.subject == bindparam("owner_subject_"),
)
_SELECT_ONE = select(_RUNS).where(_OWNED)


def _owner_params(scope: Scope, run_id: str) -> dict[str, str]:
    return {"run_id_": run_id, "owner_tenant_": scope.tenant_id, "owner_subject_": scope.subject}


@functools.cache
def _insert_stmt(dialect: str) -> Prepared:
    columns: dict[str, Any] = {c.name: bindparam(c.name) for c in _RUNS.c}  # untyped parameters
    return Prepared(insert_ignoring(dialect, RunRow, columns, ["id"]).returning(_RUNS.c.id))


@functools.cache
def _end_stmt(columns: tuple[str, ...]) -> Prepared:
    return Prepared(_update_stmt(columns, returning=False))


@functools.cache
def _update_stmt(columns: tuple[str, ...], *, returning: bool = True) -> Update:
    # The terminal check lives in the WHERE: see `RunStore._update_unless_ended`.
    stmt = (
        update(_RUNS)
        .where(_OWNED, _RUNS.c.status.not_in(_TERMINAL_SQL))
        .values({c: bindparam(f"v_{c}") for c in columns})
    )
    # RETURNING saves a second statement when the caller wants the row (SQLite 3.35+).
    return stmt.returning(*_RUNS.c) if returning else stmt


def _end_values(
    status: RunStatus,
    answer: str | None,
    trace: list[dict[str, Any]] | None,
    usage: dict[str, int] | None,
    error_code: str | None,
) -> dict[str, Any]:
    status, now = RunStatus(status), utcnow()
    if status not in TERMINAL_STATUSES:
        raise ValueError(f"a run ends with a terminal status, not {status.value!r}")
    values: dict[str, Any] = {"status": status.value, "updated_at": now, "finished_at": now}
    given = {"answer": answer, "trace": trace, "usage": usage, "error_code": error_code}
    return values | {name: value for name, value in given.items() if value is not None}
