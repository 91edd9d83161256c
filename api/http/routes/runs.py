"""``/api/v1/runs``: start a run, list and read runs, cancel one.

What they answer with is declared once, in ``agentbus_contracts`` (the client reads the
same models).
"""

from typing import Annotated

from fastapi import APIRouter, Header, Query, Request, Response, status
from pydantic import BaseModel, ConfigDict, Field

from agentbus_contracts import CancelRequested, Run, RunPage, Started
from agentbus_contracts.ids import MAX_MESSAGE_ID, RUN_ID_PATTERN
from agentbus_contracts.questions import QuestionSettings
from api.app import metrics, post_stages
from api.app.ask import Ask
from api.app.errors import NotOwner, RunEnded, RunNotFound
from api.app.run_view import describe
from api.app.webhook_requests import webhook_of
from api.http.responses import STARTING, errors
from api.http.routes.common import Access, Asker, Caller, Cancel, Starter
from api.http.trace_headers import caller_trace

router = APIRouter(prefix="/api/v1/runs", tags=["runs"])


class RunCreate(BaseModel):
    """A question to answer."""

    model_config = ConfigDict(extra="forbid")

    # No max_length here: an over-long question is a 413 with its own code, not a 422.
    question: str = Field(min_length=1, description="The question.")
    conversation_id: str | None = Field(
        default=None, pattern=RUN_ID_PATTERN, description="Continue this conversation."
    )
    parent_message_id: int | None = Field(
        default=None,
        ge=0,
        le=MAX_MESSAGE_ID,
        description="Branch the conversation: the answer (message id) the question follows, "
        "or 0 for the conversation's start. Re-ask an edited question, or regenerate an "
        "answer, from any earlier turn. Default: the end of the active branch.",
    )
    settings: QuestionSettings = QuestionSettings()
    webhook_url: str | None = Field(
        default=None, max_length=2048, description="POST the run's result here, signed."
    )
    webhook_approvals: bool = Field(
        default=False, description="Also POST the run's approval requests to webhook_url."
    )


@router.post(
    "",
    status_code=status.HTTP_202_ACCEPTED,
    response_model=Started,
    responses=errors(*STARTING),
)
async def create_run(
    body: RunCreate,
    request: Request,
    starter: Starter,
    caller: Asker,
    response: Response,
    idempotency_key: Annotated[
        str | None,
        Header(max_length=255, description="Retrying with the same key returns the same run."),
    ] = None,
) -> Started:
    """Publish a question; the run's events stream at ``events_url``."""
    post_stages.mark("before_handler")
    hook = webhook_of(body.webhook_url, body.webhook_approvals)
    trace = caller_trace(request.headers)
    ask = Ask(
        body.question,
        body.conversation_id,
        body.settings,
        webhook=hook,
        trace=trace,
        parent_message_id=body.parent_message_id,
    )
    started = await starter.start(caller, ask, idempotency_key=idempotency_key)
    if not started.replayed:
        metrics.RUNS_STARTED.labels("rest").inc()
    response.headers["Location"] = f"/api/v1/runs/{started.run_id}"
    return Started(
        run_id=started.run_id,
        conversation_id=started.conversation_id,
        events_url=f"/api/v1/runs/{started.run_id}/events",
        replayed=started.replayed,
        queued=started.queued,
        ahead=started.ahead,
    )


@router.get("", response_model=RunPage)
async def list_runs(
    access: Access,
    caller: Caller,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
    before: Annotated[str | None, Query(pattern=RUN_ID_PATTERN)] = None,
) -> RunPage:
    """The caller's runs, newest first; an admin's, the tenant's (audited).

    Runs appear once intake admitted them.
    """
    return await access.page(caller, limit=limit, before=before)


@router.get("/{run_id}", response_model=Run, responses=errors(RunNotFound))
async def get_run(run_id: str, access: Access, caller: Caller) -> Run:
    """Status, answer, trace and usage of one of the caller's runs (an admin's: the tenant's)."""
    ref = await access.visible(caller, run_id)
    return describe(ref.run_id, ref.record)


@router.post(
    "/{run_id}/cancel",
    status_code=status.HTTP_202_ACCEPTED,
    response_model=CancelRequested,
    responses=errors(RunNotFound, NotOwner, RunEnded),
)
async def cancel_run(
    run_id: str, access: Access, cancel: Cancel, caller: Caller
) -> CancelRequested:
    """Ask the run to stop; it ends ``cancelled`` between steps or while streaming."""
    ref = await access.visible(caller, run_id, read=None)
    if ref.record is not None and ref.record.is_terminal:
        raise RunEnded(f"run {run_id!r} already ended ({ref.record.status.value})")
    await cancel(run_id)
    return CancelRequested(run_id=run_id)
