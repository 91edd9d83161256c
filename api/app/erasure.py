"""Erasing a user of a tenant: every store forgets them, and the audit log says so.

An erasure finds what the SQL store holds of the user (their runs, which of them are in
flight, the documents they uploaded), refuses while a run of theirs is queued or running
(409 ``runs_in_flight``: it would write after the erasure), then asks each eraser in turn
to forget the user. The erasers are a list, one per store (`api.app.erasers`; the list is
built in `api.compose.erasure`): a new store of user data adds its eraser there.

The audit log keeps a tombstone: a row saying which kinds and how many were erased, when,
by whom (an admin's id, or ``self``), and a digest of the user's id instead of the id, so
an operator who knows the id can find it; none of the user's content. Erasing twice is
harmless: the second finds nothing and reports zeros.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

from pydantic import AwareDatetime, BaseModel, ConfigDict

from api.app.errors import InvalidRequest, RunsInFlight
from bus.store import ERASED, ERASURE_AGENT, AuditEntry, ErasureId, Holdings
from bus.store.repository import utcnow

if TYPE_CHECKING:
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
    """Forgets one user in one store."""

    async def erase(self, target: ErasureTarget) -> dict[str, int]:
        """Erase what this store holds of the target; how many of each kind."""
        ...


class ErasureReport(BaseModel):
    """What an erasure erased, per kind, and the tombstone it left in the audit log."""

    model_config = ConfigDict(frozen=True)

    tenant_id: str
    subject: str
    subject_digest: str
    erased: dict[str, int]
    erased_at: AwareDatetime
    by: str
    audit_seq: int | None = None


def subject_digest(tenant_id: str, subject: str) -> str:
    """What the tombstone records instead of the user's id."""
    return hashlib.sha256(f"{tenant_id}\n{subject}".encode()).hexdigest()[:32]


class Erasure:
    """Erases users.

    Args:
        store: finds what the SQL store holds of a user.
        erasers: the stores' erasers, in order (`api.compose.erasure.erasers_of`).
        audit: where the tombstone goes (None: no audit log, no tombstone).
    """

    def __init__(
        self, store: ErasureStore, erasers: Sequence[Eraser], audit: AuditStore | None
    ) -> None:
        self._store = store
        self._erasers = list(erasers)
        self._audit = audit

    async def erase(self, tenant_id: str, subject: str, *, by: str) -> ErasureReport:
        """Erase ``subject`` of ``tenant_id``; ``by`` is who asked (an id, or ``self``).

        Raises:
            InvalidRequest: the user id is empty or too long.
            RunsInFlight: a run of the user is queued or running (nothing was erased).
            StoreError: the store failed (erase again: every eraser can run twice).
        """
        if not subject.strip() or len(subject) > MAX_SUBJECT or subject == ERASED:
            raise InvalidRequest(f"{subject[:80]!r} is not a user id", field="subject")
        holdings = await self._store.holdings(tenant_id, subject)
        if holdings.in_flight:
            raise RunsInFlight(
                f"{len(holdings.in_flight)} run(s) of this user are in flight: "
                f"{', '.join(holdings.in_flight[:5])}"
            )
        erasure = ErasureId(id=f"erasure:{uuid.uuid4().hex}", by=by)
        target = ErasureTarget(tenant_id, subject, holdings, erasure)
        erased: dict[str, int] = {}
        for eraser in self._erasers:
            for kind, n in (await eraser.erase(target)).items():
                erased[kind] = erased.get(kind, 0) + n
        at = utcnow()
        digest = subject_digest(tenant_id, subject)
        seq = await self._tombstone(tenant_id, digest, erased, at, erasure)
        return ErasureReport(
            tenant_id=tenant_id,
            subject=subject,
            subject_digest=digest,
            erased=dict(sorted(erased.items())),
            erased_at=at,
            by=by,
            audit_seq=seq,
        )

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
                    "user_digest": digest,
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
