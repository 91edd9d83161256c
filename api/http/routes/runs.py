"""``/api/v1/runs``: start a run, list and read runs, cancel one.

What they answer with is declared once, in ``agentbus_contracts`` (the client reads the
same models).
"""

import json
from collections.abc import Callable, Coroutine
from typing import Annotated, Any

from fastapi import APIRouter, Header, Query, Request, Response, status
from fastapi.routing import APIRoute
from fastapi.telemetry import get_telemetry_data
from pydantic import BaseModel, ConfigDict, Field

from agentbus_contracts import CancelRequested, Run, RunPage, Started
from agentbus_contracts.ids import MAX_MESSAGE_ID, RUN_ID_PATTERN
from agentbus_contracts.questions import QuestionSettings
from api.app import metrics, post_stages
from api.app.ask import Ask
from api.app.auth import Principal
from api.app.errors import NotOwner, RunEnded, RunNotFound
from api.app.run_view import describe
from api.app.webhook_requests import webhook_of
from api.http.responses import STARTING, errors
from api.http.routes.common import Access, Asker, Caller, Cancel, asker_of, deps_of
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


#: The longest ``Idempotency-Key`` accepted (a longer one is a 422).
IDEMPOTENCY_KEY_MAX = 255


class _StartRoute(APIRoute):
    """``POST /api/v1/runs`` with its common request answered without FastAPI's request
    machinery (dependency solving, parameter checks, response validation: about a quarter
    of the app's CPU per POST).

    The common request has a JSON body (``Content-Type: application/json``) that
    validates, an ``Idempotency-Key`` within its limit, and no FastAPI telemetry on it.
    Anything else, a body or key that fails those checks included, goes the declared way
    (`create_run`), which answers it as it always did (a bad API key with a bad body is
    still a 401), so every status, error body and header, and the OpenAPI document, stay
    the declared route's. The key is checked by the same function either way.
    """

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        declared = super().get_route_handler()

        async def handler(request: Request) -> Response:
            common = await _common_request(request)
            if common is None:
                return await declared(request)
            body, idempotency_key = common
            caller = await asker_of(request)
            post_stages.mark("before_handler")
            return await _start(request, body, caller, idempotency_key)

        return handler


async def _common_request(request: Request) -> tuple[RunCreate, str | None] | None:
    """The body and ``Idempotency-Key`` of a common request (None: another kind)."""
    if get_telemetry_data() is not None:  # its spans and data are FastAPI's to record
        return None
    headers = request.headers
    if headers.get("content-type") != "application/json":
        return None
    idempotency_key = headers.get("idempotency-key")
    if idempotency_key is not None and len(idempotency_key) > IDEMPOTENCY_KEY_MAX:
        return None
    try:  # as FastAPI reads it: JSON, then the model validates what it decoded
        body = RunCreate.model_validate(json.loads(await request.body()))
    except Exception:  # any failure is the declared route's to answer
        return None
    return body, idempotency_key


async def _start(
    request: Request, body: RunCreate, caller: Principal, idempotency_key: str | None
) -> Response:
    """Start the run; its 202 as FastAPI would write ``Started`` (JSON bytes, Location)."""
    hook = webhook_of(body.webhook_url, body.webhook_approvals)
    ask = Ask(
        body.question,
        body.conversation_id,
        body.settings,
        webhook=hook,
        trace=caller_trace(request.headers),
        parent_message_id=body.parent_message_id,
    )
    starter = deps_of(request).starter
    started = await starter.start(caller, ask, idempotency_key=idempotency_key)
    if not started.replayed:
        metrics.RUNS_STARTED.labels("rest").inc()
    answer = Started(
        run_id=started.run_id,
        conversation_id=started.conversation_id,
        events_url=f"/api/v1/runs/{started.run_id}/events",
        replayed=started.replayed,
        queued=started.queued,
        ahead=started.ahead,
    )
    response = Response(
        answer.model_dump_json(),
        status_code=status.HTTP_202_ACCEPTED,
        media_type="application/json",
    )
    response.headers["Location"] = f"/api/v1/runs/{started.run_id}"
    return response


async def create_run(
    body: RunCreate,
    request: Request,
    caller: Asker,
    idempotency_key: Annotated[
        str | None,
        Header(
            max_length=IDEMPOTENCY_KEY_MAX,
            description="Retrying with the same key returns the same run.",
        ),
    ] = None,
) -> Response:
    """Publish a question; the run's events stream at ``events_url``."""
    post_stages.mark("before_handler")
    return await _start(request, body, caller, idempotency_key)


router.add_api_route(
    "",
    create_run,
    methods=["POST"],
    status_code=status.HTTP_202_ACCEPTED,
    response_model=Started,
    responses=errors(*STARTING),
    route_class_override=_StartRoute,
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
