"""Replaying the erasure ledger on restored data, so a backup does not bring a user back.

`agentbus restore` calls it once the backup is in place: every erasure in the ledger
(`api.app.erasure_ledger`) that had not finished when the backup began is carried out
again. The ledger names users by their mark only, so the store's users are matched by
computing theirs under the deployment's erasure key. Nothing runs during a restore, so a
step the restored bus still holds is dropped at once (its holder is not coming back), and
the user is fenced again in the restored Redis for whatever still names them there.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from api.app.erasure_ledger import Erased, ErasureLedger

if TYPE_CHECKING:
    from api.app.erasure import Erasure
    from bus.store import ErasureStore


def due(ledger: ErasureLedger, since: datetime | None) -> list[Erased]:
    """The erasures a backup begun at ``since`` may still hold the users of (all of them
    when the backup does not say when it began)."""
    return [
        e for e in ledger.erasures() if since is None or e.done_at is None or e.done_at >= since
    ]


async def replay(erasure: Erasure, store: ErasureStore, erasures: list[Erased]) -> list[str]:
    """Erase again, in the restored stores, every user an erasure of ``erasures`` names;
    the ids of the erasures that found someone."""
    if not erasures:
        return []
    users = await store.subjects()
    replayed: list[str] = []
    for e in erasures:
        for tenant_id, subject in sorted(users):
            if tenant_id == e.tenant_id and erasure.mark(tenant_id, subject) == e.user:
                await erasure.erase(tenant_id, subject, by=e.by, replaying=e.id)
                replayed.append(e.id)
    return replayed
