"""Erasing a user's data: an admin erases a user of the tenant, or a user erases themselves.

Both answer the erasure's report (what was erased, per kind); the audit log keeps a
tombstone without the user's content or id (`api.app.erasure`). The user's API keys are erased
too: a user who erases themselves is signed out for good.
"""

from typing import Annotated

from fastapi import APIRouter, Depends, Path, Query

from api.app.auth import Authenticator
from api.app.erasure import MAX_SUBJECT, Erasure, ErasureReport
from api.app.errors import ErasureIncomplete, InvalidRequest, Unavailable
from api.http.responses import ADMIN, errors
from api.http.routes.common import Admin, Caller, use_case

router = APIRouter(prefix="/api/v1", tags=["erasure"])

Subject = Annotated[str, Path(min_length=1, max_length=MAX_SUBJECT, description="The user's id.")]


#: None: erasure needs a state store.
_Erasure = Annotated[Erasure | None, Depends(use_case(lambda deps: deps.erasure))]
_Auth = Annotated[Authenticator, Depends(use_case(lambda deps: deps.auth))]


def _erasure(erasure: Erasure | None) -> Erasure:
    if erasure is None:
        raise Unavailable("erasure needs a state store")
    return erasure


@router.delete(
    "/users/{subject}", response_model=ErasureReport, responses=errors(*ADMIN, ErasureIncomplete)
)
async def erase_user(subject: Subject, erasure: _Erasure, admin: Admin) -> ErasureReport:
    """Erase a user of your tenant (admin keys only): conversations, runs, gates, schedules,
    keys, uploaded documents and their passages, what Redis holds of their runs; their
    audit rows are redacted. Their keys stop working in every API process at once, their
    runs in flight are cancelled and waited for first; 409 ``erasure_incomplete`` when
    their steps still ran at the end of the wait (erase again)."""
    return await _erasure(erasure).erase(admin.tenant_id, subject, by=admin.subject)


@router.delete("/me", response_model=ErasureReport, responses=errors(ErasureIncomplete))
async def erase_me(
    erasure: _Erasure,
    auth: _Auth,
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
    report = await _erasure(erasure).erase(caller.tenant_id, caller.subject, by="self")
    auth.forget(caller.key_id)  # the others read it again: its tenant's version moved
    return report
