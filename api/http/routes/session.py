"""``/api/v1/sessions``: the web page signs in (login token or API key) and out."""

from typing import Annotated

from fastapi import APIRouter, Depends, Header, Response, status
from pydantic import BaseModel, ConfigDict, Field

from api.app.auth import Authenticator, bearer_token
from api.app.errors import InvalidRequest, Unauthorized
from api.app.ports import SessionStore
from api.app.sessions import (
    close_session,
    is_session_token,
    open_session,
    principal_of_key_id,
    redeem_login_token,
)
from api.http.routes.common import Caller, use_case

router = APIRouter(prefix="/api/v1/sessions", tags=["sessions"])

_NO_STORE = {"Cache-Control": "no-store"}
_Sessions = Annotated[SessionStore, Depends(use_case(lambda deps: deps.sessions))]
_Auth = Annotated[Authenticator, Depends(use_case(lambda deps: deps.auth))]


class SignIn(BaseModel):
    """A one-time login token from ``agentbus up``; without one, the bearer API key signs in."""

    model_config = ConfigDict(extra="forbid")

    login_token: str | None = Field(default=None, max_length=128)


class SessionView(BaseModel):
    """Who the session acts for; ``token`` only when one was just opened."""

    tenant_id: str
    subject: str
    role: str
    is_admin: bool
    token: str | None = None
    expires_in: int | None = None


@router.post("", status_code=status.HTTP_201_CREATED, response_model=SessionView)
async def sign_in(
    body: SignIn,
    sessions: _Sessions,
    auth: _Auth,
    response: Response,
    authorization: Annotated[str | None, Header()] = None,
) -> SessionView:
    """Exchange a login token (once) or an API key for a short-lived session token."""
    response.headers.update(_NO_STORE)
    if body.login_token is not None:
        key_id = await redeem_login_token(sessions, body.login_token)
        if key_id is None:
            raise Unauthorized(
                "the login link was used already or has expired",
                hint="run `agentbus login-url` for a new one, or paste an API key",
            )
        who = await principal_of_key_id(auth, key_id)
    else:
        token = bearer_token(authorization)
        if token is None:
            raise InvalidRequest("send a login_token, or an API key as the bearer token")
        if is_session_token(token):
            raise InvalidRequest("a session cannot open another session; sign in again")
        who = await auth.authenticate(token)
    session = await open_session(sessions, who)
    return SessionView(
        tenant_id=who.tenant_id,
        subject=who.subject,
        role=who.role.value,
        is_admin=who.is_admin,
        token=session.token,
        expires_in=session.expires_in,
    )


@router.get("/current", response_model=SessionView)
async def current(caller: Caller, response: Response) -> SessionView:
    """Who the bearer (a session or an API key) acts for."""
    response.headers.update(_NO_STORE)
    return SessionView(
        tenant_id=caller.tenant_id,
        subject=caller.subject,
        role=caller.role.value,
        is_admin=caller.is_admin,
    )


@router.delete("/current", status_code=status.HTTP_204_NO_CONTENT)
async def sign_out(
    sessions: _Sessions, _caller: Caller, authorization: Annotated[str | None, Header()] = None
) -> Response:
    """End the bearer's session (an API key is not a session: nothing to end)."""
    token = bearer_token(authorization)
    if token is not None and is_session_token(token):
        await close_session(sessions, token)
    return Response(status_code=status.HTTP_204_NO_CONTENT)
