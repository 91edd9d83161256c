"""Which runs a caller may see (how a run is shown: `api.app.run_view`; joins: `api.app.joins`).

A run belongs to the user who started it. Its owner key in Redis (written when the API
published it) names the tenant and user; the store has the run under both once intake has
run (and for runs started elsewhere, such as the CLI, or whose Redis keys expired). The
caller sees a run it owns; a tenant admin also sees every run of its tenant, and each such
read is audited (`api.app.oversight`). Anything else is "not found": another user's or
tenant's run id never answers differently from an id that does not exist. Changing a run
(cancel) is its owner's alone: an admin who sees it gets 403.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from agentbus_contracts import RunPage
from api.app.errors import NotOwner, RunNotFound
from api.app.oversight import audit_read
from api.app.run_view import describe
from bus.commands import RUN_ID_PATTERN
from bus.events import RunStatus
from bus.store import RunCursor, RunQuery, RunRecord

if TYPE_CHECKING:
    from api.app.auth import Principal
    from api.app.ports import RunOwner
    from bus.store import AuditStore, RunStore

RUN_ID = re.compile(RUN_ID_PATTERN)


@dataclass(frozen=True, slots=True)
class RunRef:
    """A run the caller may see."""

    run_id: str
    shard: int
    record: RunRecord | None  # None while only Redis knows it (intake has not run yet)
    subject: str = ""  # who started it


def owner_value(tenant_id: str, subject: str) -> str:
    """What a run's owner key holds (names have no '/', so it splits back unambiguously)."""
    return f"{tenant_id}/{subject}"


@dataclass(frozen=True, kw_only=True)
class RunAccess:
    """Which runs a caller may see or change.

    Attributes:
        shard_of: the shard of a run's streams and keys (`RunEvents.shard_of`).
        run_owner: who started a run, as its owner key says (the store may not know it yet).
        runs: the run store.
        audit: where an admin's read of another user's run is recorded.
    """

    shard_of: Callable[[str], int]
    run_owner: RunOwner
    runs: RunStore
    audit: AuditStore | None

    async def visible(
        self, who: Principal, run_id: str, *, read: str | None = "read_run"
    ) -> RunRef:
        """The run with this id if ``who`` may see it, or raise ``RunNotFound``.

        Args:
            who: the caller.
            run_id: the run.
            read: what an admin's read of another user's run is audited as; None when the
                caller means to change the run, which only its owner may (403 otherwise).

        Raises:
            RunNotFound: the caller may not see the run, or there is none.
            NotOwner: the caller sees the run (an admin) but wants to change another's.
        """
        if not RUN_ID.match(run_id):
            raise RunNotFound(f"no run {run_id[:80]!r}")
        shard = self.shard_of(run_id)
        raw = await self.run_owner(run_id, shard)
        tenant, _, subject = (raw or "").partition("/")
        if raw is not None and tenant != who.tenant_id:
            raise RunNotFound(f"no run {run_id!r}")
        record = await self.runs.get(who.scope, run_id)
        if record is not None:
            subject = record.subject
        # Only Redis knows it (intake has not stored it yet): the owner key says whose it is.
        elif raw is None or not subject or not who.scope.sees(tenant, subject):
            raise RunNotFound(f"no run {run_id!r}")
        if read is None:
            if not who.scope.owns(subject):
                raise NotOwner(f"run {run_id!r} belongs to another user")
        else:
            await audit_read(
                self.audit, who, what=read, owners=[subject], target=run_id, run_id=run_id
            )
        return RunRef(run_id, shard, record, subject)

    async def page(self, who: Principal, *, limit: int, before: str | None) -> RunPage:
        """The caller's runs, newest first (an admin's: the tenant's, the read audited)."""
        records = await self.runs.list(who.scope, limit=limit, before=before)
        others = [r.id for r in records if r.subject != who.subject]
        await audit_read(
            self.audit, who, what="list_runs", owners=(r.subject for r in records), ids=others
        )
        views = [describe(r.id, r) for r in records]
        return RunPage(runs=views, next_before=views[-1].id if len(views) == limit else None)

    async def stored(self, who: Principal, run_id: str) -> RunRecord | None:
        """The run as the store holds it now, if the caller sees it (a poll of a run the
        caller was already shown: not audited again)."""
        return await self.runs.get(who.scope, run_id)

    async def find_own(
        self,
        who: Principal,
        *,
        conversation_id: str | None,
        statuses: Iterable[str] | None,
        updated_since: datetime | None,
        limit: int,
        after: tuple[datetime, str] | None,
    ) -> tuple[list[RunRecord], int]:
        """The caller's own runs, most recently updated first, and how many match in all
        (A2A's ``ListTasks``).

        Args:
            who: the caller.
            conversation_id: only this conversation's runs.
            statuses: only runs in one of these statuses (None: any).
            updated_since: only runs updated at or after this time.
            limit: the most runs to return.
            after: where the previous page ended (its last run's update time and id).
        """
        query = RunQuery(
            conversation_id=conversation_id,
            statuses=None if statuses is None else frozenset(RunStatus(s) for s in statuses),
            updated_since=updated_since,
        )
        cursor = None if after is None else RunCursor(updated_at=after[0], run_id=after[1])
        return await self.runs.find(who.own_scope, query, limit=limit, after=cursor)
