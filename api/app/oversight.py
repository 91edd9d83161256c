"""A tenant admin reading other users' runs and conversations: allowed, and always audited.

Each such read (a run, its events, its gate, a conversation, or a list that shows any of
another user's) appends one row to the tenant's hash-chained audit log before the data is
returned: agent ``api``, the admin as subject, what was read as ``tool``, its id as
``call_id`` (and ``run_id`` for a run), the owners in ``args``. A read that cannot be
audited is not served. A user reading their own things writes nothing.
"""

from __future__ import annotations

from collections.abc import Iterable

from api.app.auth import Principal
from api.app.errors import Unavailable
from bus.store import AuditEntry, AuditStore
from bus.store.audit import API_AGENT

#: The most ids of a listed page recorded in the row (a page holds at most 200).
_MAX_IDS = 200


async def audit_read(
    audit: AuditStore | None,
    who: Principal,
    *,
    what: str,
    owners: Iterable[str],
    target: str = "",
    run_id: str = "",
    ids: Iterable[str] = (),
) -> None:
    """Record ``who`` reading ``what`` when any of its ``owners`` is someone else.

    Args:
        audit: the audit log.
        who: the caller.
        what: what was read (``read_run``, ``read_run_events``, ``read_gate``,
            ``list_runs``, ``read_conversation``, ``list_conversations``).
        owners: the subjects who own what was read.
        target: the id read (a run's or a conversation's), empty for a list.
        run_id: the run read, if it was one.
        ids: for a list, the ids of the other users' items it showed.

    Raises:
        Unavailable: there is no audit log to write to (the read is refused).
        StoreError: the row could not be written (the read is refused).
    """
    others = sorted({owner for owner in owners if owner != who.subject})
    if not others:
        return
    if audit is None:
        raise Unavailable("reading other users' data needs the audit log, which is not set up")
    args: dict[str, object] = {"owners": others}
    listed = list(ids)[:_MAX_IDS]
    if listed:
        args["ids"] = listed
    await audit.append(
        AuditEntry(
            tenant_id=who.tenant_id,
            subject=who.subject,
            run_id=run_id,
            agent=API_AGENT,
            call_id=target,
            tool=what,
            args=args,
            status="ok",
            code="admin_read",
            message=f"{who.subject} (admin) read {what} of {', '.join(others)}"[:500],
            duration_ms=0.0,
        )
    )
