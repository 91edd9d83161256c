"""Erasing a user of a tenant: every store forgets them, and the audit log says so.

An erasure is final, in this order (each step an eraser, `api.streams.erasers`, listed in
`api.compose.erasure`):

1. it is recorded as started in the erasure ledger (`api.app.erasure_ledger`), which a
   restore replays, so a backup taken before it does not bring the user back;
2. the user is fenced (`bus.fence`): from now on no step of theirs, in any process,
   commits anything, and no question of theirs starts a run;
3. their API keys are deleted and their tenant's settings version bumped, so every API
   process reads a cached key again on its next use and refuses it;
4. their runs in flight are cancelled and their steps under way waited for
   (`bus.quiesce`): a step writes the store before its commit, so deleting before it
   ended would leave what it wrote;
5. only then are their rows, vectors, memories, Redis keys and stream entries deleted and
   their audit rows redacted.

The audit log keeps a tombstone: a row saying which kinds and how many were erased, when,
by whom (an admin's id, or ``self``), and the user's mark (an HMAC of their id under the
deployment's erasure key) instead of the id: an operator who knows the id (and the
deployment) can find it; a dictionary of ids does not reverse it. Erasing twice is
harmless: the second finds nothing and reports zeros.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Literal, Protocol

from pydantic import AwareDatetime, BaseModel, ConfigDict

from api.app.erasure_ledger import ErasureLedger, LedgerLine
from api.app.errors import InvalidRequest
from bus.store import ERASED, ERASURE_AGENT, AuditEntry, ErasureId, Holdings
from bus.store.repository import utcnow

if TYPE_CHECKING:
    from bus.fence import Fence
    from bus.store import AuditStore, ErasureStore

#: The longest user id a key can carry (``api_keys.subject``).
MAX_SUBJECT = 255


@dataclass(frozen=True, slots=True)
class ErasureTarget:
    """Whom to erase, what the SQL store held of them before anything was erased, and
    which erasure this is (what its redaction records and tombstone say)."""

    tenant_id: str
    subject: str
    holdings: Holdings
    erasure: ErasureId


class Eraser(Protocol):
    """Forgets one user in one store.

    ``settles``: true for the eraser after which nothing of the user is in flight (their
    work ended); what the store holds of them is read again after it, so a run that began
    while the erasure started is erased too.
    """

    settles: bool

    async def erase(self, target: ErasureTarget) -> dict[str, int]:
        """Erase what this store holds of the target; how many of each kind."""
        ...


class ErasureReport(BaseModel):
    """What an erasure erased, per kind, and the tombstone it left in the audit log
    (``subject_digest``: the user's mark, HMAC-SHA256 under the deployment's erasure key)."""

    model_config = ConfigDict(frozen=True)

    tenant_id: str
    subject: str
    subject_digest: str
    erased: dict[str, int]
    erased_at: AwareDatetime
    by: str
    audit_seq: int | None = None


class Erasure:
    """Erases users.

    Args:
        store: finds what the SQL store holds of a user.
        erasers: the stores' erasers, in order (`api.compose.erasure.erasers_of`).
        audit: where the tombstone goes (None: no audit log, no tombstone).
        fence: names users by their mark (`bus.fence`).
        ledger: where erasures are recorded for restores to replay (None: nowhere).
    """

    def __init__(
        self,
        store: ErasureStore,
        erasers: Sequence[Eraser],
        audit: AuditStore | None,
        *,
        fence: Fence,
        ledger: ErasureLedger | None,
    ) -> None:
        self._store = store
        self._erasers = list(erasers)
        self._audit = audit
        self._fence = fence
        self._ledger = ledger

    def mark(self, tenant_id: str, subject: str) -> str:
        """What the tombstone and the ledger name the user by."""
        return self._fence.mark(tenant_id, subject)

    async def erase(
        self, tenant_id: str, subject: str, *, by: str, replaying: str | None = None
    ) -> ErasureReport:
        """Erase ``subject`` of ``tenant_id``; ``by`` is who asked (an id, or ``self``).

        With ``replaying`` (an erasure's id in the ledger), it is that erasure carried out
        again on restored data: the ledger already has it.

        Raises:
            InvalidRequest: the user id is empty or too long.
            ErasureIncomplete: steps of the user were still running when the wait ran out
                (they are fenced and their keys gone; erase again).
            StoreError: the store failed (erase again: every eraser can run twice).
        """
        if not subject.strip() or len(subject) > MAX_SUBJECT or subject == ERASED:
            raise InvalidRequest(f"{subject[:80]!r} is not a user id", field="subject")
        holdings = await self._store.holdings(tenant_id, subject)
        erasure = ErasureId(id=replaying or f"erasure:{uuid.uuid4().hex}", by=by)
        mark = self.mark(tenant_id, subject)
        if replaying is None:
            await self._record(tenant_id, mark, erasure, "started")
        target = ErasureTarget(tenant_id, subject, holdings, erasure)
        erased: dict[str, int] = {}
        for eraser in self._erasers:
            for kind, n in (await eraser.erase(target)).items():
                erased[kind] = erased.get(kind, 0) + n
            if eraser.settles:
                held = await self._store.holdings(tenant_id, subject)
                target = dataclasses.replace(target, holdings=held)
        at = utcnow()
        seq = await self._tombstone(tenant_id, mark, erased, at, erasure)
        if replaying is None:
            await self._record(tenant_id, mark, erasure, "done")
        return ErasureReport(
            tenant_id=tenant_id,
            subject=subject,
            subject_digest=mark,
            erased=dict(sorted(erased.items())),
            erased_at=at,
            by=by,
            audit_seq=seq,
        )

    async def _record(
        self, tenant_id: str, mark: str, erasure: ErasureId, state: Literal["started", "done"]
    ) -> None:
        if self._ledger is None:
            return
        line = LedgerLine(
            id=erasure.id, tenant_id=tenant_id, user=mark, by=erasure.by, state=state, at=utcnow()
        )
        await self._ledger.record(line)

    async def _tombstone(
        self, tenant_id: str, digest: str, erased: dict[str, int], at: datetime, erasure: ErasureId
    ) -> int | None:
        if self._audit is None:
            return None
        by = erasure.by
        said = ", ".join(f"{kind} {n}" for kind, n in sorted(erased.items()) if n)
        row = await self._audit.append(
            AuditEntry(
                tenant_id=tenant_id,
                subject=ERASED if by == "self" else by,
                run_id="",
                agent=ERASURE_AGENT,
                call_id=erasure.id,
                tool="erase_user",
                args={
                    "user_mark": digest,
                    "by": by,
                    "erased": dict(sorted(erased.items())),
                    "at": at.isoformat(),
                },
                status="ok",
                code="user_erased",
                message=f"a user's data was erased by {by}: {said or 'nothing was held'}",
                duration_ms=0.0,
            )
        )
        return None if row is None else row.seq
