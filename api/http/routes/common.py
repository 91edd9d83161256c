"""What every route shares: the use cases it is given and the authenticated caller."""

import time
from collections.abc import Callable, Coroutine
from typing import Annotated, Any, TypeVar

from fastapi import Depends, Request, Security
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.requests import HTTPConnection

from api.app import post_stages
from api.app.access import RunAccess
from api.app.audit_reads import AuditReads
from api.app.auth import Authenticator, Principal
from api.app.ports import CancelRun
from api.app.preferences import Effective
from api.app.starter import RunStarter
from api.app.tenant_settings import SettingsBook
from api.http.use_cases import UseCases

# Declares the scheme for /docs ("Authorize"); auto_error off so a missing key gets our
# own 401 body instead of FastAPI's.
_bearer = HTTPBearer(auto_error=False, description="An API key from `agentbus keys create`.")


def deps_of(request: HTTPConnection) -> UseCases:
    """The dependencies ``create_app`` was given, outside dependency injection (a request's
    or a websocket's)."""
    deps: UseCases = request.app.state.deps
    return deps


_T = TypeVar("_T")


def use_case(pick: Callable[[UseCases], _T]) -> Callable[[Request], Coroutine[Any, Any, _T]]:
    """A FastAPI dependency giving a route the one use case it calls, as the composition
    root built it.

    A coroutine although it awaits nothing: FastAPI runs a plain ``def`` dependency in its
    thread pool, a thread hop per request (7% of the API's CPU in ``bench api``).
    """

    async def get(request: Request) -> _T:
        return pick(deps_of(request))

    return get


async def get_principal(
    request: Request,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Security(_bearer)],
) -> Principal:
    """The caller, from its bearer API key (401 otherwise)."""
    token = credentials.credentials if credentials is not None else None
    if not post_stages.timing():
        return await deps_of(request).auth.authenticate(token)
    started = time.perf_counter()
    principal = await deps_of(request).auth.authenticate(token)
    post_stages.observe("auth", time.perf_counter() - started)
    return principal


async def get_asker(
    request: Request,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Security(_bearer)],
) -> Principal:
    """The caller of a route that only starts a run: a cached key's tenant version is
    checked by the run starter where it publishes (``Principal.version_pending``), not in
    a round trip of its own here."""
    token = credentials.credentials if credentials is not None else None
    auth = deps_of(request).auth
    if not post_stages.timing():
        return await auth.authenticate(token, defer_version=True)
    started = time.perf_counter()
    principal = await auth.authenticate(token, defer_version=True)
    post_stages.observe("auth", time.perf_counter() - started)
    return principal


async def asker_of(request: Request) -> Principal:
    """`get_asker` outside dependency injection (a route's own handling of its request)."""
    return await get_asker(request, await _bearer(request))


async def get_admin(principal: Annotated[Principal, Depends(get_principal)]) -> Principal:
    """The caller, who must hold an admin key of its tenant (403 otherwise)."""
    principal.require_admin()
    return principal


Caller = Annotated[Principal, Depends(get_principal)]
Asker = Annotated[Principal, Depends(get_asker)]
Admin = Annotated[Principal, Depends(get_admin)]

#: The use cases most routes share.
Auth = Annotated[Authenticator, Depends(use_case(lambda deps: deps.auth))]
Access = Annotated[RunAccess, Depends(use_case(lambda deps: deps.access))]
Starter = Annotated[RunStarter, Depends(use_case(lambda deps: deps.starter))]
Cancel = Annotated[CancelRun, Depends(use_case(lambda deps: deps.cancel))]
Defaults = Annotated[Effective, Depends(use_case(lambda deps: deps.defaults))]
AuditLog = Annotated[AuditReads, Depends(use_case(lambda deps: deps.audit_reads))]

#: The tenants' settings (``/settings``, ``/agents/config``).
TenantSettings = Annotated[SettingsBook, Depends(use_case(lambda deps: deps.tenant_settings))]
