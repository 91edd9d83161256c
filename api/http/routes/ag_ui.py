"""``POST /api/v1/ag-ui``: agentbus as an AG-UI agent (the protocol agent front-ends render).

The body is AG-UI's ``RunAgentInput``; the response is its event stream (server-sent
events, ``api.http.ag_ui_events``). The API key is the bearer token, and the run starts
through the same ``RunStarter`` as ``POST /api/v1/runs`` (owner, groups, rate limit, quota,
audit).

* ``threadId`` is the conversation: a thread continues the caller's conversation with that
  id, or starts one (a thread id another user holds is not found, 404).
* The question is the last user message; ``forwardedProps`` may carry ``mode``,
  ``accuracy`` and ``multitask`` (what the question does if the thread is busy, as on
  ``POST /api/v1/runs``; default: the tenant's).
* ``runId`` with ``threadId`` is the request's idempotency key: the same input posted again
  (a client reconnecting) follows the same agentbus run, its events from the start.
* A run that pauses at a gate finishes with an interrupt outcome. Resume it by posting
  ``resume: [{"interruptId": ..., "status": "resolved", "payload": {"decision": ...}}]``
  (``cancelled`` rejects or denies); the response streams the run from the gate on.
* ``tools`` (the front end's own) are offered to the researcher (a name of one of
  agentbus's tools is refused, 400 ``tool_name_taken``). When the model calls one, the
  response sends the call (tool call start, args, end) and finishes; the front end runs it
  and posts its next input ending with the tool message(s), which resumes the run; the
  response streams the rest of it.
* Errors are AG-UI's own: a ``RUN_ERROR`` event (its ``code`` the API's error code) as the
  stream's only event, under the HTTP status the REST API would answer with.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Sequence
from typing import Annotated

from ag_ui.core import RunAgentInput, RunErrorEvent, ToolMessage, UserMessage
from ag_ui.encoder import EventEncoder
from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response, StreamingResponse
from pydantic import ValidationError

from agentbus_contracts.events import ApprovalRequest, ClientEvent, Done
from agentbus_contracts.questions import QuestionSettings
from api.app import metrics
from api.app.ask import Ask
from api.app.auth import Principal, bearer_token
from api.app.client_tools import Declared, client_tools, results_run
from api.app.errors import ApiError, InvalidRequest
from api.app.gate_actions import Gates
from api.app.run_follow import RunFollower
from api.app.starter import RunStarter
from api.http.ag_ui_events import CANCEL_DECISION, AgUiEvents
from api.http.error_kinds import status_of
from api.http.responses import CALLER, GATES, STARTING, sse_errors
from api.http.routes.common import Auth, Starter, use_case
from bus.json_values import is_object

router = APIRouter(prefix="/api/v1", tags=["ag-ui"])
_ENCODER = EventEncoder()
_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
_Follower = Annotated[RunFollower, Depends(use_case(lambda deps: deps.follower))]
_Gates = Annotated[Gates, Depends(use_case(lambda deps: deps.gates))]
#: The gateway's own tools' names, which a client's tool may not take.
_ServerTools = Annotated[frozenset[str], Depends(use_case(lambda deps: deps.server_tools))]


#: A refusal is one AG-UI RUN_ERROR event (text/event-stream), its code the API's error
#: code, under the status the REST API would answer with.
_REFUSAL = sse_errors(*CALLER, *STARTING, *GATES)


@router.post("/ag-ui", responses=_REFUSAL)
async def run_agent(
    request: Request,
    auth: Auth,
    starter: Starter,
    follower: _Follower,
    gates: _Gates,
    server_tools: _ServerTools,
) -> Response:
    """Answer an AG-UI ``RunAgentInput`` with the run's AG-UI events (server-sent events)."""
    try:
        who = await auth.authenticate(bearer_token(request.headers.get("authorization")))
        given = _parse(await request.body())
        results = _tool_results(given)
        if results:
            run_id, before = await _resume_tools(follower, gates, who, results)
            events = AgUiEvents(given.thread_id, given.run_id, run_id)
            for _, event in before:  # what the client was sent before the pause: not again
                events.of(event)
            after = before[-1][0] if before else "0-0"
        elif given.resume:
            run_id, before = await _resume(follower, gates, who, given)
            events = AgUiEvents(given.thread_id, given.run_id, run_id)
            for _, event in before:  # what the client was sent before the gate: not again
                events.of(event)
            after = before[-1][0] if before else "0-0"
        else:
            run_id, after = await _start(starter, server_tools, who, given), "0-0"
            events = AgUiEvents(given.thread_id, given.run_id, run_id)
    except ApiError as e:
        metrics.REJECTED.labels(e.code).inc()
        error = RunErrorEvent(message=e.message, code=e.code)
        retry = {"Retry-After": str(e.retry_after)} if e.retry_after else {}
        return Response(
            _ENCODER.encode(error), status_of(e), retry, media_type=_ENCODER.get_content_type()
        )
    body = _stream(follower, events, run_id, after)
    return StreamingResponse(body, media_type=_ENCODER.get_content_type(), headers=_HEADERS)


def _parse(raw: bytes) -> RunAgentInput:
    try:
        given = RunAgentInput.model_validate_json(raw)
    except ValidationError as e:
        err = e.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or "body"
        raise InvalidRequest(f"{where}: {err['msg']}", field=where) from e
    if not keys_ok(given.thread_id) or not keys_ok(given.run_id):
        raise InvalidRequest("threadId and runId: 1-64 letters, digits, _ or -", field="threadId")
    return given


def keys_ok(value: str) -> bool:
    """Whether a thread or run id is one agentbus can key a conversation or retry by."""
    return 0 < len(value) <= 64 and all(c.isalnum() or c in "_-" for c in value)


def _question(given: RunAgentInput) -> str:
    for message in reversed(given.messages):
        if isinstance(message, UserMessage):
            if isinstance(message.content, str):
                return message.content
            texts = [getattr(part, "text", "") for part in message.content]
            return "\n".join(t for t in texts if t)
    raise InvalidRequest("messages: no user message to answer", field="messages")


def _settings(given: RunAgentInput) -> QuestionSettings:
    props: object = given.forwarded_props or {}
    given_props = props if is_object(props) else {}
    chosen = {k: given_props[k] for k in ("mode", "accuracy", "multitask") if k in given_props}
    try:
        return QuestionSettings.model_validate(chosen)
    except ValidationError as e:
        where = "forwardedProps." + ".".join(str(p) for p in e.errors()[0]["loc"])
        raise InvalidRequest(f"{where}: {e.errors()[0]['msg']}", field=where) from e


async def _start(
    starter: RunStarter, server_tools: frozenset[str], who: Principal, given: RunAgentInput
) -> str:
    declared = [
        Declared(t.name, t.description, t.parameters, f"tools[{i}]")
        for i, t in enumerate(given.tools or ())
    ]
    tools = client_tools(declared, server_tools)
    ask = Ask(_question(given), given.thread_id, _settings(given), client_tools=tools or None)
    started = await starter.start(
        who, ask, idempotency_key=f"ag-ui:{given.thread_id}:{given.run_id}"
    )
    if not started.replayed:
        metrics.RUNS_STARTED.labels("ag-ui").inc()
    return started.run_id


async def _resume(
    follower: RunFollower, gates: Gates, who: Principal, given: RunAgentInput
) -> tuple[str, list[tuple[str, ClientEvent]]]:
    """Decide the gate a resume entry names: the run, and its events before the decision."""
    entry = (given.resume or [])[0]
    run_id, _, reason = entry.interrupt_id.rpartition(":")
    if not keys_ok(run_id) or reason not in CANCEL_DECISION:
        raise InvalidRequest("resume.interruptId: not an agentbus interrupt", field="resume")
    decision = CANCEL_DECISION[reason]
    if entry.status == "resolved":
        payload: object = entry.payload
        decision = payload.get("decision") if is_object(payload) else payload
        if not isinstance(decision, str):
            raise InvalidRequest("resume.payload: {decision: ...} is required", field="resume")
    # The run is paused: nothing is added to its events until the decision below.
    before = await follower.history(run_id)
    await gates.decide(who, run_id, decision)
    return run_id, before


def _tool_results(given: RunAgentInput) -> list[tuple[str, str]]:
    """The tool messages the input ends with ((tool call id, content), in order)."""
    found: list[tuple[str, str]] = []
    for message in reversed(given.messages):
        if not isinstance(message, ToolMessage):
            break
        found.insert(0, (message.tool_call_id, _text(message.content)))
    return found


async def _resume_tools(
    follower: RunFollower, gates: Gates, who: Principal, results: list[tuple[str, str]]
) -> tuple[str, list[tuple[str, ClientEvent]]]:
    """Resume the run whose client-tool calls the input's tool messages answer: the run, and
    its events before the pause. Tool messages of the gateway's own calls (the client keeps
    them in its history) are left out: only the calls the run waits for are answered."""
    run_id, by_call = results_run(results, "messages")
    # The run is paused: nothing is added to its events until it resumes.
    before = await follower.history(run_id)
    asked = next((e for _, e in reversed(before) if isinstance(e, ApprovalRequest)), None)
    waiting = {c.id for c in asked.calls or ()} if asked is not None else set[str]()
    answers = {call: text for call, text in by_call.items() if call in waiting} or by_call
    await gates.client_tools(who, run_id, answers)
    return run_id, before


def _text(content: str | Sequence[object]) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(t for part in content if isinstance(t := getattr(part, "text", None), str))


async def _stream(
    follower: RunFollower, events: AgUiEvents, run_id: str, after: str
) -> AsyncIterator[str]:
    """The run's AG-UI events until it ends or pauses. A client that goes away does not stop
    the run: posting the same input again follows it (``POST /api/v1/runs/{id}/cancel``
    stops it)."""
    yield _ENCODER.encode(events.started())
    async with contextlib.aclosing(follower.follow(run_id, after=after)) as feed:
        async for event in feed:
            if event is None:
                yield ": keep-alive\n\n"
                continue
            if isinstance(event, ApprovalRequest | Done):
                for item in events.ended(event):
                    yield _ENCODER.encode(item)
                return
            for item in events.of(event):
                yield _ENCODER.encode(item)
