"""The audit repository: an append-only log of tool calls, one hash chain per tenant.

Every row carries the hash of the row before it in its tenant's chain and a hash of its
own columns (see `bus.store.audit_chain`), so an edited, inserted or deleted row is
detected by `AuditStore.verify`. Appends from any number of gateway processes form one
line per tenant: each append claims the tenant's head row (``audit_heads``) first, with
one statement that creates it for a new tenant and returns it (`claim_head`). On Postgres
the upsert locks the row, held to commit, and returns its latest committed version. On
SQLite it is the transaction's first statement and a write, which takes the database's
write lock at once, as ``BEGIN IMMEDIATE`` would (a read first would let two writers read
the same head, and one of them then fail); the busy timeout queues the others.
"""

from __future__ import annotations

import builtins
import functools
from collections.abc import Sequence
from typing import Any, cast

from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy import (
    Connection,
    Table,
    and_,
    bindparam,
    func,
    insert,
    or_,
    select,
    update,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.sql.dml import ReturningInsert

from bus.errors import StoreError
from bus.store.audit_chain import (
    GENESIS,
    AuditLogRecord,
    AuditReport,
    ChainReport,
    PageReader,
    canonical_json,
    hash_row,
    walk_chain,
)
from bus.store.audit_redaction import ERASURE_AGENT, REDACT_TOOL, redaction_check
from bus.store.group_commit import Prepared
from bus.store.repository import Repository, utcnow
from bus.store.scope import Scope, apply_scope_sync
from bus.store.tables import AuditAnchorRow, AuditHeadRow, AuditRow, RunRow

_AUDIT: Table = AuditRow.__table__  # pyright: ignore[reportAssignmentType]
_HEADS: Table = AuditHeadRow.__table__  # pyright: ignore[reportAssignmentType]

__all__ = [
    "GENESIS",
    "AuditEntry",
    "AuditLogRecord",
    "AuditReport",
    "AuditStore",
    "ChainReport",
]


class AuditEntry(BaseModel):
    """What the gateway records about one call; secrets must be redacted before this.

    Attributes:
        tenant_id: whose chain the row joins.
        subject: the user behind the run.
        run_id: the run.
        agent: the calling role.
        call_id: the call's deterministic id.
        tool: the tool called (as the model named it, known or not).
        tool_version: the tool's declared version, when the tool exists.
        args: the redacted arguments (any JSON value).
        status: the outcome status (``ok``, ``error``, ``refused``, ``egress_blocked``).
        code: the outcome's stable code.
        message: the outcome's message.
        blocked_host: the host that needs approval, for ``egress_blocked``.
        duration_ms: time spent in the gateway.
        record_key: the ledger record this entry came from; an entry whose key the
            tenant's chain already has is not written again.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    tenant_id: str = Field(min_length=1, max_length=64)
    subject: str = Field(max_length=255)
    run_id: str = Field(max_length=64)
    agent: str = Field(max_length=64)
    call_id: str = Field(max_length=255)
    tool: str = Field(max_length=255)
    tool_version: str | None = Field(default=None, max_length=64)
    args: Any = None
    status: str = Field(max_length=16)
    code: str = Field(max_length=64)
    message: str = ""
    blocked_host: str | None = Field(default=None, max_length=255)
    duration_ms: float = Field(ge=0)
    record_key: str | None = Field(default=None, max_length=200)


#: The ``agent`` of rows the API writes about its own actions (an admin reading a run or a
#: conversation of another user). A row about a conversation carries its id as ``call_id``.
API_AGENT = "api"


class AuditStore(Repository):
    """Appends to, reads and verifies the audit log; rows are never updated or deleted here
    (retention prunes, `bus.store.retention`; erasure redacts, `bus.store.erasure`).

    Appends and checks work on a tenant's whole chain; reads are scoped like runs: a user
    sees the rows whose subject is theirs (their runs' tool calls, their own actions), a
    tenant-wide scope every row of the tenant.

    Args:
        db: an engine (the store makes its own session factory) or a session factory. The
            caller owns the engine and disposes of it.
    """

    async def append(
        self, entry: AuditEntry, *, once_per_call: bool = False
    ) -> AuditLogRecord | None:
        """Add one row at the end of the tenant's chain.

        Args:
            entry: the call to record.
            once_per_call: record nothing if the tenant's chain already has a row for
                ``entry.call_id``. The gateway sets it for side-effecting calls, which run
                at most once per call id, so a redelivered call that re-sends its audit
                record is not logged twice.

        Returns:
            The stored row, or None when ``once_per_call`` found one already.

        Raises:
            StoreError: the database failed (nothing was written).
        """
        async with self._scoped(
            Scope.tenant(entry.tenant_id), "append to the audit log"
        ) as session:
            return await append_in(session, entry, once_per_call)

    async def append_many(self, entries: Sequence[tuple[AuditEntry, bool]]) -> int:
        """Append several calls in one transaction (group commit), in order.

        Each tenant's head is locked once for the whole batch and its rows are inserted in
        one statement. An entry is skipped when its ``record_key`` is already in the
        chain, or (with ``once_per_call``) its ``call_id`` is, including earlier in the batch.

        Args:
            entries: (entry, once_per_call) pairs, as for `append`.

        Returns:
            How many rows were written.

        Raises:
            StoreError: the database failed (nothing was written).
        """
        by_tenant: dict[str, builtins.list[tuple[AuditEntry, bool]]] = {}
        for entry, once in entries:
            by_tenant.setdefault(entry.tenant_id, []).append((entry, once))
        group = self._group_commit()

        def work(conn: Connection) -> int:
            written = 0
            for tenant, items in by_tenant.items():
                apply_scope_sync(conn, Scope.tenant(tenant))
                written += _append_batch(conn, group.dialect, tenant, items)
            return written

        return await group.run(work, "append to the audit log")

    async def list(
        self,
        scope: Scope,
        limit: int = 50,
        before_seq: int | None = None,
        *,
        run_id: str | None = None,
        conversation_id: str | None = None,
    ) -> builtins.list[AuditLogRecord]:
        """The rows ``scope`` sees, newest first; ``before_seq`` pages back through older ones.

        Args:
            scope: a user sees the rows whose subject is theirs; a tenant-wide scope (an
                admin) every row of the tenant.
            limit: the most rows to return.
            before_seq: only rows older than this position of the tenant's chain.
            run_id: only the rows of this run.
            conversation_id: only the rows of this conversation's runs, and rows about
                the conversation itself (see ``API_AGENT``).

        Raises:
            ValueError: ``limit`` is below 1.
        """
        if limit < 1:
            raise ValueError(f"limit must be at least 1, got {limit}")
        stmt = select(AuditRow).where(scope.where(AuditRow))
        if before_seq is not None:
            stmt = stmt.where(AuditRow.seq < before_seq)
        if run_id is not None:
            stmt = stmt.where(AuditRow.run_id == run_id)
        if conversation_id is not None:
            runs = select(RunRow.id).where(
                RunRow.conversation_id == conversation_id, scope.where(RunRow)
            )
            about = and_(AuditRow.agent == API_AGENT, AuditRow.call_id == conversation_id)
            stmt = stmt.where(or_(AuditRow.run_id.in_(runs), about))
        # Newest first across tenants too (the operator's scope); seq alone within one.
        stmt = stmt.order_by(AuditRow.seq.desc(), AuditRow.id.desc()).limit(limit)
        async with self._scoped(scope, "read the audit log") as session:
            return [AuditLogRecord.model_validate(r) for r in await session.scalars(stmt)]

    async def verify(self, tenant_id: str | None = None, *, page_size: int = 1000) -> AuditReport:
        """Check every chain (or one tenant's) from its anchor (or first row) to its head.

        Reads in pages of ``page_size`` rows, each in its own short transaction, so a
        large log neither holds a transaction open nor sits in memory. Appends made while
        it runs are past the head it read first and are left for the next run.

        Returns:
            One report per chain, each naming its first broken row, if any.

        Raises:
            StoreError: the database failed.
        """
        scope = Scope.operator() if tenant_id is None else Scope.tenant(tenant_id)
        async with self._scoped(scope, "read the audit heads") as session:
            heads_stmt = select(AuditHeadRow.tenant_id, AuditHeadRow.seq, AuditHeadRow.last_hash)
            tenants_stmt = select(AuditRow.tenant_id).group_by(AuditRow.tenant_id)
            anchors_stmt = select(
                AuditAnchorRow.tenant_id, AuditAnchorRow.seq, AuditAnchorRow.last_hash
            )
            if tenant_id is not None:
                heads_stmt = heads_stmt.where(AuditHeadRow.tenant_id == tenant_id)
                tenants_stmt = tenants_stmt.where(AuditRow.tenant_id == tenant_id)
                anchors_stmt = anchors_stmt.where(AuditAnchorRow.tenant_id == tenant_id)
            heads = {h.tenant_id: (h.seq, h.last_hash) for h in await session.execute(heads_stmt)}
            with_rows = set(await session.scalars(tenants_stmt))
            # seq 0: an anchor made by a pass that found nothing to prune yet.
            anchors = {
                a.tenant_id: (a.seq, a.last_hash)
                for a in await session.execute(anchors_stmt)
                if a.seq > 0
            }
        chains: builtins.list[ChainReport] = []
        for t in sorted(with_rows | set(heads) | set(anchors)):
            reader = self._page_reader(t, page_size)
            records = await self._redaction_records(t)
            check = redaction_check(records)
            report = await walk_chain(t, heads.get(t), reader, anchors.get(t), check)
            if report.broken is None:
                chains.append(report)
                continue
            moved, later = await self._anchor(t), await self._redaction_records(t)
            if moved != anchors.get(t) or later != records:
                # Retention pruned, or an erasure redacted, while the chain was read:
                # check it again from its anchor, against every redaction record.
                report = await walk_chain(t, heads.get(t), reader, moved, redaction_check(later))
            chains.append(report)
        return AuditReport(chains=chains)

    async def _redaction_records(self, tenant_id: str) -> builtins.list[AuditLogRecord]:
        """The tenant's redaction records (`bus.store.audit_redaction`), oldest first."""
        stmt = (
            select(AuditRow)
            .where(
                AuditRow.tenant_id == tenant_id,
                AuditRow.agent == ERASURE_AGENT,
                AuditRow.tool == REDACT_TOOL,
            )
            .order_by(AuditRow.seq)
        )
        async with self._scoped(Scope.tenant(tenant_id), "read the redaction records") as s:
            return [AuditLogRecord.model_validate(r) for r in await s.scalars(stmt)]

    async def _anchor(self, tenant_id: str) -> tuple[int, str] | None:
        """The tenant's anchor (seq, hash), or None while nothing was pruned."""
        stmt = select(AuditAnchorRow.seq, AuditAnchorRow.last_hash).where(
            AuditAnchorRow.tenant_id == tenant_id, AuditAnchorRow.seq > 0
        )
        async with self._scoped(Scope.tenant(tenant_id), "read the audit anchor") as session:
            row = (await session.execute(stmt)).one_or_none()
        return None if row is None else (row.seq, row.last_hash)

    def _page_reader(self, tenant_id: str, page_size: int) -> PageReader:
        async def read(after_seq: int, up_to_seq: int | None) -> list[AuditLogRecord]:
            stmt = select(AuditRow).where(AuditRow.tenant_id == tenant_id, AuditRow.seq > after_seq)
            if up_to_seq is not None:
                stmt = stmt.where(AuditRow.seq <= up_to_seq)
            stmt = stmt.order_by(AuditRow.seq).limit(page_size)
            async with self._scoped(Scope.tenant(tenant_id), "read the audit log") as session:
                return [AuditLogRecord.model_validate(r) for r in await session.scalars(stmt)]

        return read

    async def count(self, tenant_id: str) -> int:
        """How many rows the tenant's chain has."""
        stmt = select(func.count()).select_from(AuditRow).where(AuditRow.tenant_id == tenant_id)
        async with self._scoped(Scope.tenant(tenant_id), "count audit rows") as session:
            return int(await session.scalar(stmt) or 0)


async def append_in(
    session: AsyncSession, entry: AuditEntry, once_per_call: bool = False
) -> AuditLogRecord | None:
    """`AuditStore.append` inside a transaction the caller holds, so a change and its
    audit row commit together (or neither does)."""
    tenant = entry.tenant_id
    dialect = session.get_bind().dialect.name
    head = (await session.execute(claim_head(dialect), _new_head(tenant))).one()
    if once_per_call:
        seen = await session.scalar(
            select(AuditRow.id)
            .where(AuditRow.tenant_id == tenant, AuditRow.call_id == entry.call_id)
            .limit(1)
        )
        if seen is not None:
            return None
    values = _row_values(entry, seq=head.seq + 1, prev_hash=head.last_hash)
    row = AuditRow(**values)
    session.add(row)
    await session.flush()
    await session.execute(
        update(AuditHeadRow)
        .where(AuditHeadRow.tenant_id == tenant)
        .values(seq=values["seq"], last_hash=values["row_hash"])
        .execution_options(synchronize_session=False)
    )
    return AuditLogRecord.model_validate(row)


def _row_values(entry: AuditEntry, *, seq: int, prev_hash: str) -> dict[str, Any]:
    values: dict[str, Any] = entry.model_dump(exclude={"args"}) | {
        "seq": seq,
        "created_at": utcnow(),
        "args": canonical_json(entry.args),
        "duration_ms": round(float(entry.duration_ms), 3),
        "prev_hash": prev_hash,
    }
    values["row_hash"] = hash_row(values)
    return values


def _append_batch(
    conn: Connection, dialect: str, tenant: str, items: Sequence[tuple[AuditEntry, bool]]
) -> int:
    """Extend one tenant's chain by ``items`` (skipping those already written); row count."""
    head = _claim_head_prepared(dialect).first(conn, _new_head(tenant))
    assert head is not None  # an upsert with RETURNING always returns the row
    wanted_keys = sorted({e.record_key for e, _ in items if e.record_key})
    wanted_calls = sorted({e.call_id for e, once in items if once})
    seen_keys: set[str | None] = set()
    seen_calls: set[str] = set()
    if wanted_keys:
        seen_keys |= _found(conn, _keys_in(len(wanted_keys)), tenant, wanted_keys)
    if wanted_calls:
        seen_calls |= _found(conn, _calls_in(len(wanted_calls)), tenant, wanted_calls)
    rows: list[dict[str, Any]] = []
    seq, prev = head[0], head[1]
    for entry, once in items:
        key = entry.record_key
        if (key is not None and key in seen_keys) or (once and entry.call_id in seen_calls):
            continue
        seen_keys.add(key)
        seen_calls.add(entry.call_id)
        seq += 1
        values = _row_values(entry, seq=seq, prev_hash=prev)
        prev = values["row_hash"]
        rows.append(values)
    if not rows:
        return 0
    _insert_rows(tuple(rows[0])).many(conn, rows)
    _MOVE_HEAD.rowcount(conn, {"tenant": tenant, "new_seq": seq, "new_hash": prev})
    return len(rows)


def _found(conn: Connection, stmt: Prepared, tenant: str, values: list[str]) -> set[Any]:
    """The values of ``values`` the tenant's chain already holds (``stmt``: `_keys_in`)."""
    params: dict[str, Any] = {f"v{i}": v for i, v in enumerate(values)} | {"tenant": tenant}
    return {row[0] for row in stmt.all(conn, params)}


def _new_head(tenant: str) -> dict[str, Any]:
    return {"tenant_id": tenant, "seq": 0, "last_hash": GENESIS}


@functools.cache
def claim_head(dialect: str) -> ReturningInsert[int, str]:
    """The tenant's chain head, (seq, last_hash), locked to the transaction's end: one
    statement that writes first (see the module docstring) and creates a new tenant's head.

    ``INSERT ... ON CONFLICT (tenant_id) DO UPDATE SET seq = seq RETURNING seq, last_hash``:
    the update changes nothing, but it locks the row and returns it, which
    ``SELECT ... FOR UPDATE`` after ``INSERT ... DO NOTHING`` did in two statements.
    """
    columns: dict[str, Any] = {c: bindparam(c) for c in ("tenant_id", "seq", "last_hash")}
    if dialect == "postgresql":
        upsert: postgresql.Insert | sqlite.Insert = postgresql.insert(AuditHeadRow)
    elif dialect == "sqlite":
        upsert = sqlite.insert(AuditHeadRow)
    else:
        raise StoreError(f"unsupported database {dialect!r}")
    claimed = upsert.values(columns).on_conflict_do_update(
        index_elements=["tenant_id"], set_={"seq": _HEADS.c.seq}
    )
    return claimed.returning(_HEADS.c.seq, _HEADS.c.last_hash)


@functools.cache
def _claim_head_prepared(dialect: str) -> Prepared:
    return Prepared(claim_head(dialect))


# The batch's statements, built once with bound parameters (an IN list once per length:
# an expanding parameter would be rewritten into the statement on every execution).
_TENANT = cast("Any", bindparam("tenant"))  # untyped bound parameter (SQLAlchemy: Unknown)
_MOVE_HEAD = Prepared(
    update(_HEADS)
    .where(_HEADS.c.tenant_id == _TENANT)
    .values(seq=bindparam("new_seq"), last_hash=bindparam("new_hash"))
)


@functools.cache
def _keys_in(count: int) -> Prepared:
    listed: list[Any] = [bindparam(f"v{i}") for i in range(count)]
    return Prepared(
        select(_AUDIT.c.record_key).where(
            _AUDIT.c.tenant_id == _TENANT, _AUDIT.c.record_key.in_(listed)
        )
    )


@functools.cache
def _calls_in(count: int) -> Prepared:
    listed: list[Any] = [bindparam(f"v{i}") for i in range(count)]
    return Prepared(
        select(_AUDIT.c.call_id).where(_AUDIT.c.tenant_id == _TENANT, _AUDIT.c.call_id.in_(listed))
    )


@functools.cache
def _insert_rows(columns: tuple[str, ...]) -> Prepared:
    return Prepared(insert(_AUDIT).values({c: bindparam(c) for c in columns}))
