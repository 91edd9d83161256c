"""``/api/v1/teams``: a tenant's teams (apply, read, list, draw, delete).

Any key of the tenant reads its teams; only admin keys apply and delete them. A team is
sent as YAML or JSON (``Content-Type: application/yaml`` or ``application/json``); an
invalid one is a 422 ``team_invalid`` whose ``error.faults`` names each fault with its
JSON pointer. Storing a team writes a new version; runs in flight keep the one they
started with.
"""

import re
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request, Response, status
from pydantic import BaseModel

from api.app.errors import TeamNotFound, TeamRefused, Unavailable
from api.app.teams import TeamBook, TeamSummary, TeamView, summary_of, view_of
from api.http.responses import ADMIN, errors
from api.http.routes.common import Admin, Caller, use_case

router = APIRouter(prefix="/api/v1/teams", tags=["teams"])
NAME = r"^[a-z][a-z0-9_-]{0,39}$"
_BODY: dict[str, Any] = {
    "requestBody": {
        "required": True,
        "content": {
            "application/json": {"schema": {"type": "object"}},
            "application/yaml": {"schema": {"type": "string"}},
        },
        "description": "The team document (docs/teams.md).",
    }
}


class TeamList(BaseModel):
    """The shipped modes (version 0), then the tenant's teams."""

    teams: list[TeamSummary]


class TeamGraph(BaseModel):
    """A team's graph as a Mermaid flowchart."""

    name: str
    version: int
    mermaid: str


# The column is a 32-bit integer: a larger version cannot exist, so it is refused as bad input.
Version = Annotated[int | None, Query(ge=0, le=2**31 - 1, description="A stored version.")]


#: None: teams need the state store.
_Teams = Annotated[TeamBook | None, Depends(use_case(lambda deps: deps.teams))]


def _book(teams: TeamBook | None) -> TeamBook:
    if teams is None:
        raise Unavailable("teams need the state store", hint="configure AGENTBUS_DATABASE_URL")
    return teams


@router.get("", response_model=TeamList)
async def list_teams(teams: _Teams, caller: Caller) -> TeamList:
    """The tenant's teams, each at its latest version."""
    return TeamList(teams=[summary_of(r) for r in await _book(teams).list(caller.tenant_id)])


@router.put(
    "/{name}",
    response_model=TeamView,
    responses=errors(*ADMIN, TeamRefused),
    openapi_extra=_BODY,
)
async def put_team(name: str, request: Request, teams: _Teams, admin: Admin) -> TeamView:
    """Check the team and store it as its next version (admin keys only)."""
    _name(name)
    text = (await request.body()).decode("utf-8", errors="replace")
    record = await _book(teams).apply(admin.tenant_id, name, text, admin.subject)
    return view_of(record)


@router.get("/{name}", response_model=TeamView, responses=errors(TeamNotFound))
async def get_team(name: str, teams: _Teams, caller: Caller, version: Version = None) -> TeamView:
    """A team's latest version, or the version asked for."""
    return view_of(await _book(teams).get(caller.tenant_id, name, version))


@router.get("/{name}/graph", response_model=TeamGraph, responses=errors(TeamNotFound))
async def get_team_graph(
    name: str, teams: _Teams, caller: Caller, version: Version = None
) -> TeamGraph:
    """A team's graph as Mermaid."""
    book = _book(teams)
    record = await book.get(caller.tenant_id, name, version)
    drawn = await book.mermaid(caller.tenant_id, name, record.version)
    return TeamGraph(name=name, version=record.version, mermaid=drawn)


@router.delete(
    "/{name}",
    status_code=status.HTTP_204_NO_CONTENT,
    response_class=Response,
    responses=errors(*ADMIN, TeamNotFound),
)
async def delete_team(name: str, teams: _Teams, admin: Admin) -> Response:
    """Delete a team (admin keys only); runs in flight finish on their version."""
    await _book(teams).delete(admin.tenant_id, name)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


def _name(name: str) -> None:
    if not re.fullmatch(NAME, name):
        raise TeamRefused(
            f"team name {name!r} is not lower-case letters, digits, - and _ (40 at most)",
            faults=[
                {"pointer": "/name", "code": "invalid_name", "message": f"{name!r} is no name"}
            ],
        )
