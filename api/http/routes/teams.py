"""``/api/v1/teams``: a tenant's teams (apply, read, list, draw, delete).

Any key of the tenant reads its teams; only admin keys apply and delete them. A team is
sent as YAML or JSON (``Content-Type: application/yaml`` or ``application/json``); an
invalid one is a 422 ``team_invalid`` whose ``error.faults`` names each fault with its
JSON pointer. Storing a team writes a new version; runs in flight keep the one they
started with.
"""

import re
from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request, Response, status
from pydantic import BaseModel

from agents.teams.document import TeamDocument
from api.app.errors import TeamNotFound, TeamRefused, Unavailable
from api.app.teams import TeamBook
from api.http.responses import ADMIN, errors
from api.http.routes.common import Admin, Caller, use_case
from bus.store import TeamRecord

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


class TeamView(BaseModel):
    """One version of a team."""

    name: str
    version: int
    created_at: datetime
    created_by: str
    document: dict[str, Any]


class TeamSummary(BaseModel):
    """A team as listed: its latest version and what it declares."""

    name: str
    version: int
    description: str
    agents: list[str]
    created_at: datetime
    created_by: str


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


def _view(record: TeamRecord) -> TeamView:
    return TeamView.model_validate(record, from_attributes=True)


@router.get("", response_model=TeamList)
async def list_teams(teams: _Teams, caller: Caller) -> TeamList:
    """The tenant's teams, each at its latest version."""
    records = await _book(teams).list(caller.tenant_id)
    return TeamList(
        teams=[
            TeamSummary(
                name=r.name,
                version=r.version,
                description=doc.description,
                agents=[a.name for a in doc.agents],
                created_at=r.created_at,
                created_by=r.created_by,
            )
            for r in records
            for doc in (TeamDocument.model_validate(r.document),)
        ]
    )


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
    return _view(record)


@router.get("/{name}", response_model=TeamView, responses=errors(TeamNotFound))
async def get_team(name: str, teams: _Teams, caller: Caller, version: Version = None) -> TeamView:
    """A team's latest version, or the version asked for."""
    return _view(await _book(teams).get(caller.tenant_id, name, version))


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
