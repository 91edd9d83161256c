"""``/api/v1/schedules``: questions asked on a cron schedule (add, list, read, pause,
resume, delete).

A schedule belongs to the user who adds it; another user's id is 404. A tenant admin may
list and read the tenant's (each read of another user's is audited), but only the owner
may pause, resume or delete one (403 for the admin). Every tick's run lands in the
schedule's conversation and, if it has one, on its webhook (`api.app.scheduler`).
"""

from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Query, Response, status
from pydantic import BaseModel, ConfigDict, Field

from agentbus_contracts import (
    ScheduledQuestion,
    ScheduledQuestionDetail,
    ScheduledQuestionList,
)
from agentbus_contracts.questions import QuestionSettings
from api.app.errors import (
    CriticalToolNotApproved,
    ModelNotAllowed,
    NotOwner,
    QuestionTooLarge,
    ScheduleNotFound,
    Unavailable,
    WebhookRefused,
)
from api.app.schedules import NewSchedule, ScheduleBook, tick_of, view_of
from api.http.responses import errors
from api.http.routes.common import Caller, use_case

router = APIRouter(prefix="/api/v1/schedules", tags=["schedules"])


class ScheduleCreate(BaseModel):
    """A question to ask on a schedule."""

    model_config = ConfigDict(extra="forbid")

    cron: str = Field(
        min_length=1,
        max_length=120,
        description="Five fields: minute hour day-of-month month day-of-week ('0 8 * * MON').",
    )
    timezone: str = Field(
        default="UTC", min_length=1, max_length=64, description="An IANA time zone."
    )
    # No max_length here: an over-long question is a 413 with its own code, not a 422.
    question: str = Field(min_length=1, description="The question every tick asks.")
    settings: QuestionSettings = QuestionSettings()
    webhook_url: str | None = Field(
        default=None, max_length=2048, description="POST each run's result here, signed."
    )
    missed: Literal["skip", "run_once"] = Field(
        default="skip",
        description="Ticks missed while nothing ran (every process down): skip them, or "
        "run once for all of them.",
    )


#: None: this API has no schedules store.
_Schedules = Annotated[ScheduleBook | None, Depends(use_case(lambda deps: deps.schedules))]


def _book(schedules: ScheduleBook | None) -> ScheduleBook:
    if schedules is None:
        raise Unavailable("this API has no schedules store")
    return schedules


#: What adding answers besides every route's errors: what a run start would refuse at each tick.
_ADDING = errors(QuestionTooLarge, ModelNotAllowed, CriticalToolNotApproved, WebhookRefused)
#: What reading or changing one schedule answers: another user's or tenant's is not found;
#: an admin reading the tenant's may not change another user's.
_ONE = errors(ScheduleNotFound, NotOwner)


@router.post(
    "",
    status_code=status.HTTP_201_CREATED,
    response_model=ScheduledQuestion,
    responses=_ADDING,
)
async def add_schedule(
    body: ScheduleCreate, schedules: _Schedules, caller: Caller, response: Response
) -> ScheduledQuestion:
    """Ask ``question`` at every tick of ``cron`` in ``timezone``, as the caller."""
    new = NewSchedule(
        body.cron, body.timezone, body.question, body.settings, body.webhook_url, body.missed
    )
    record = await _book(schedules).add(caller, new)
    response.headers["Location"] = f"/api/v1/schedules/{record.id}"
    return view_of(record)


@router.get("", response_model=ScheduledQuestionList)
async def list_schedules(
    schedules: _Schedules,
    caller: Caller,
    limit: Annotated[int, Query(ge=1, le=500)] = 100,
) -> ScheduledQuestionList:
    """The caller's schedules; an admin's, the tenant's (audited)."""
    found = await _book(schedules).list(caller, limit)
    return ScheduledQuestionList(schedules=[view_of(s) for s in found])


@router.get("/{schedule_id}", response_model=ScheduledQuestionDetail, responses=_ONE)
async def get_schedule(
    schedule_id: str,
    schedules: _Schedules,
    caller: Caller,
    ticks: Annotated[int, Query(ge=1, le=200, description="Latest ticks to return.")] = 20,
) -> ScheduledQuestionDetail:
    """One schedule with its latest ticks (the run each started, or why none)."""
    found, recent = await _book(schedules).get(caller, schedule_id, ticks)
    return ScheduledQuestionDetail(schedule=view_of(found), ticks=[tick_of(t) for t in recent])


@router.post("/{schedule_id}/pause", response_model=ScheduledQuestion, responses=_ONE)
async def pause_schedule(
    schedule_id: str, schedules: _Schedules, caller: Caller
) -> ScheduledQuestion:
    """Pause one of the caller's schedules: no tick runs until it is resumed."""
    return view_of(await _book(schedules).pause(caller, schedule_id, paused=True))


@router.post("/{schedule_id}/resume", response_model=ScheduledQuestion, responses=_ONE)
async def resume_schedule(
    schedule_id: str, schedules: _Schedules, caller: Caller
) -> ScheduledQuestion:
    """Resume one of the caller's schedules at its next tick after now (the ticks of the
    paused time do not run)."""
    return view_of(await _book(schedules).pause(caller, schedule_id, paused=False))


@router.delete("/{schedule_id}", status_code=status.HTTP_204_NO_CONTENT, responses=_ONE)
async def delete_schedule(schedule_id: str, schedules: _Schedules, caller: Caller) -> Response:
    """Delete one of the caller's schedules (its conversation and runs stay)."""
    await _book(schedules).delete(caller, schedule_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)
