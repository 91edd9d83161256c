"""Erasing a user's data: an admin erases a user of the tenant, or a user erases themselves.

Both answer the erasure's report (what was erased, per kind); the audit log keeps a
tombstone without the user's content (`api.app.erasure`). The user's API keys are erased
too: a user who erases themselves is signed out for good.
"""

from typing import Annotated

from fastapi import APIRouter, Path, Query

from api.app.erasure import MAX_SUBJECT, Erasure, ErasureReport
from api.app.errors import InvalidRequest, RunsInFlight, Unavailable
from api.http.responses import ADMIN, errors
from api.http.routes.common import Admin, Caller, Deps

router = APIRouter(prefix="/api/v1", tags=["erasure"])

Subject = Annotated[str, Path(min_length=1, max_length=MAX_SUBJECT, description="The user's id.")]


def _erasure(deps: Deps) -> Erasure:
    if deps.erasure is None:
        raise Unavailable("erasure needs a state store")
    return deps.erasure


@router.delete(
    "/users/{subject}", response_model=ErasureReport, responses=errors(*ADMIN, RunsInFlight)
)
async def erase_user(subject: Subject, deps: Deps, admin: Admin) -> ErasureReport:
    """Erase a user of your tenant (admin keys only): conversations, runs, gates, schedules,
    keys, uploaded documents and their passages, what Redis holds of their runs; their
    audit rows are redacted. 409 ``runs_in_flight`` while a run of theirs is running."""
    return await _erasure(deps).erase(admin.tenant_id, subject, by=admin.subject)


@router.delete("/me", response_model=ErasureReport, responses=errors(RunsInFlight))
async def erase_me(
    deps: Deps,
    caller: Caller,
    confirm: Annotated[
        str, Query(max_length=MAX_SUBJECT, description="Your own user id, to confirm.")
    ] = "",
) -> ErasureReport:
    """Erase your own data (any key), as an admin would erase you; your keys stop working.

    ``confirm`` must be your user id (the key's subject): there is no undo.
    """
    if confirm != caller.subject:
        raise InvalidRequest(
            "erasing your data cannot be undone: confirm with your user id",
            hint="DELETE /api/v1/me?confirm=<your user id>",
            field="confirm",
        )
    report = await _erasure(deps).erase(caller.tenant_id, caller.subject, by="self")
    deps.auth.forget(caller.key_id)  # other replicas drop it within AGENTBUS_API_KEY_CACHE_S
    return report
