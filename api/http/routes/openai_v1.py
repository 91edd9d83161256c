"""``/v1/chat/completions`` and ``/v1/models``: agentbus as a model any OpenAI client can use.

The API key is the bearer token. The model name picks mode and accuracy
(``api.http.openai_dialect.MODELS``); the last user message is the question. The conversation is,
in this order: the one named by the ``X-Agentbus-Conversation`` header (it must exist), the
caller's own conversation whose id is the ``user`` field, its conversation keyed
by the ``user`` value, or a new one. A new conversation is seeded with the earlier
messages of the request; a stored one keeps its own history. Responses name the run and
conversation in ``X-Agentbus-Run`` / ``X-Agentbus-Conversation``. A run that pauses at a
gate ends the completion with a message saying how to resume it. The client's own ``tools``
(`api.http.openai_request`): a call of one ends the completion with ``tool_calls``, and the
next request, ending with the ``tool`` messages that answer them, resumes that run and
answers with the rest of it. Errors use OpenAI's shape.
An ``X-Agentbus-Multitask`` header sets the question's ``multitask`` policy (a question
sent while its conversation answers another waits its turn by default; a queued one's
completion starts when its run does).
Runs start through the same ``RunStarter`` as ``POST /api/v1/runs`` (rate limit, quota,
owner), and an ``Idempotency-Key`` header works as it does there: a retry follows the
same run.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Annotated, Any

import anyio
from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from pydantic import ValidationError
from redis.exceptions import RedisError

from agentbus_contracts.events import ApprovalRequest, ClientEvent, Done, RunStarted
from agentbus_contracts.questions import QuestionSettings
from api.app import metrics
from api.app.ask import Ask, Started
from api.app.auth import Authenticator, Principal, bearer_token
from api.app.client_tools import client_tools, results_run
from api.app.completions import Completions, ConversationTaken, Turn
from api.app.errors import BACKEND_FAILURES, ApiError, ConversationNotFound
from api.app.gate_actions import Gates
from api.app.ports import CancelRun
from api.app.run_follow import RunFollower
from api.app.starter import RunStarter
from api.http.openai_dialect import (
    CONVERSATION_HEADER,
    MULTITASK_HEADER,
    RUN_HEADER,
    AnswerStream,
    ChatMessage,
    ChatRequest,
    Chunks,
    OpenAIError,
    OpenAIErrorBody,
    model_card,
    model_list,
    pause_message,
    settings_for,
    split_messages,
    usage_of,
    verification,
)
from api.http.openai_request import (
    answer_schema,
    checked_answer,
    declared_tools,
    refuse_unsupported,
    tool_calls_of,
    tool_results,
    tools_required,
)
from api.http.responses import CALLER, GATES, STARTING, ErrorCase, errors, inline_schema
from api.http.routes.common import Auth, deps_of

router = APIRouter(prefix="/v1", tags=["openai-compatible"])

#: OpenAI's shape for the API's own errors (its 422 is OpenAI's 400) and the dialect's own.
_REFUSALS: tuple[ErrorCase, ...] = (*CALLER, (400, "invalid_request"))
_READ_ERRORS = errors(*_REFUSALS, model=OpenAIErrorBody, renumber={422: 400})
_MODEL_ERRORS = errors(
    *_REFUSALS, (404, "model_not_found"), model=OpenAIErrorBody, renumber={422: 400}
)
_CHAT_ERRORS = errors(
    *_REFUSALS,
    *STARTING,
    (400, "unsupported_parameter"),
    (400, "tool_name_taken"),
    *GATES,
    (404, "model_not_found"),
    (404, "conversation_not_found"),
    (409, "conversation_taken"),
    (409, "run_cancelled"),
    (429, "run_budget_exhausted"),
    (500, "run_error"),
    (500, "response_format_unmet"),
    (504, "run_timeout"),
    model=OpenAIErrorBody,
    renumber={422: 400},
)
#: The body is read by the route itself (every error in OpenAI's shape), so the document
#: is given its schema here.
_CHAT_BODY = {
    "requestBody": {
        "required": True,
        "content": {"application/json": {"schema": inline_schema(ChatRequest)}},
    }
}

#: OpenAI's SDKs retry a 409 (and any 5xx) unless told not to: a retry would ask the
#: cancelled question again.
NO_RETRY = {"X-Should-Retry": "false"}
_MAX_IDEMPOTENCY_KEY = 255  # as on POST /api/v1/runs


@dataclass(frozen=True, slots=True)
class _Uses:
    """What a chat completion calls: starts, follows, resumes and cancels runs, and finds
    or seeds the conversation a run continues."""

    starter: RunStarter
    follower: RunFollower
    gates: Gates
    cancel: CancelRun
    completions: Completions
    server_tools: frozenset[str]


async def _uses_of(request: Request) -> _Uses:
    deps = deps_of(request)
    return _Uses(
        deps.starter, deps.follower, deps.gates, deps.cancel, deps.completions,
        deps.server_tools,
    )  # fmt: skip


_Dialect = Annotated[_Uses, Depends(_uses_of)]


async def _caller(auth: Authenticator, request: Request) -> Principal:
    token = bearer_token(request.headers.get("authorization"))
    return await auth.authenticate(token)


async def _answering(work: Any) -> Response:
    """Run ``work()``; every error becomes OpenAI's error shape."""
    try:
        return await work()
    except OpenAIError as e:
        return e.response()
    except ApiError as e:
        metrics.REJECTED.labels(e.code).inc()
        return OpenAIError.of(e).response()
    except (*BACKEND_FAILURES, RedisError) as e:
        message = f"Redis or the state store failed: {type(e).__name__}"
        return OpenAIError(503, message, type="server_error", code="unavailable").response()


@router.get("/models", responses=_READ_ERRORS)
async def list_models(request: Request, auth: Auth) -> Response:
    """The models agentbus serves (one per mode and accuracy)."""

    async def work() -> Response:
        await _caller(auth, request)
        return JSONResponse(model_list())

    return await _answering(work)


@router.get("/models/{model}", responses=_MODEL_ERRORS)
async def get_model(model: str, request: Request, auth: Auth) -> Response:
    """One model."""

    async def work() -> Response:
        await _caller(auth, request)
        settings_for(model)  # model_not_found for names agentbus does not serve
        return JSONResponse(model_card(model))

    return await _answering(work)


@router.post("/chat/completions", responses=_CHAT_ERRORS, openapi_extra=_CHAT_BODY)
async def chat_completions(request: Request, auth: Auth, uses: _Dialect) -> Response:
    """Answer the last user message with an agentbus run (streamed with ``stream: true``)."""

    async def work() -> Response:
        who = await _caller(auth, request)
        chat = _parse(await request.body())
        refuse_unsupported(chat)
        schema = answer_schema(chat)
        settings_for(chat.model)  # model_not_found before anything else
        results = tool_results(chat)
        if results:  # the client ran its tools: its results resume the run that asked
            return await _resumed(uses, who, chat, schema, results)
        tools = client_tools(declared_tools(chat), uses.server_tools)
        settings = _with_multitask(settings_for(chat.model), request.headers.get(MULTITASK_HEADER))
        question, earlier = split_messages(chat.messages)
        header = request.headers.get(CONVERSATION_HEADER)
        conversation = await _conversation(uses, who, header, chat.user, earlier)
        idem = request.headers.get("idempotency-key")
        if idem is not None and len(idem) > _MAX_IDEMPOTENCY_KEY:
            raise OpenAIError(
                400, f"Idempotency-Key has at most {_MAX_IDEMPOTENCY_KEY} characters",
                code="invalid_request", param="Idempotency-Key",
            )  # fmt: skip
        ask = Ask(
            question, conversation, settings, answer_schema=schema, client_tools=tools or None,
            tool_required=tools_required(chat),
        )  # fmt: skip
        started = await uses.starter.start(who, ask, idempotency_key=idem)
        if not started.replayed:
            metrics.RUNS_STARTED.labels("openai").inc()
        return await _respond(uses, started, chat, schema)

    return await _answering(work)


async def _respond(
    uses: _Uses,
    started: Started,
    chat: ChatRequest,
    schema: dict[str, Any] | None,
    before: Sequence[ClientEvent] = (),
    after: str = "0-0",
) -> Response:
    """The completion of a run followed from its start, or from where it paused (after the
    ``before`` events, which the client was answered with already)."""
    headers = {RUN_HEADER: started.run_id, CONVERSATION_HEADER: started.conversation_id}
    if chat.stream:
        usage = chat.stream_options is not None and chat.stream_options.include_usage
        body = _stream(
            uses, started, chat.model, include_usage=usage, schema=schema, before=before,
            after=after,
        )  # fmt: skip
        headers |= {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
        return StreamingResponse(body, media_type="text/event-stream", headers=headers)
    completion = await _complete(uses, started, chat.model, schema, before, after)
    return JSONResponse(completion, headers=headers)


async def _resumed(
    uses: _Uses,
    who: Principal,
    chat: ChatRequest,
    schema: dict[str, Any] | None,
    results: list[tuple[str, str]],
) -> Response:
    """Resume the run whose client-tool calls ``results`` answer, and follow it on."""
    run_id, by_call = results_run(results, "messages")
    # The run is paused: nothing is added to its events until the resume below, which
    # also checks that the caller owns it.
    rows = await uses.follower.history(run_id)
    await uses.gates.client_tools(who, run_id, by_call)
    before = [event for _, event in rows]
    began = next((e for e in before if isinstance(e, RunStarted)), None)
    conversation = began.conversation_id if began and began.conversation_id else ""
    after = rows[-1][0] if rows else "0-0"
    started = Started(run_id, conversation, uses.follower.shard_of(run_id), replayed=True)
    return await _respond(uses, started, chat, schema, before, after)


def _with_multitask(settings: QuestionSettings, policy: str | None) -> QuestionSettings:
    if policy is None:
        return settings
    try:
        return QuestionSettings.model_validate({**settings.model_dump(), "multitask": policy})
    except ValidationError as e:
        raise OpenAIError(
            400, f"{MULTITASK_HEADER} is one of enqueue, reject, interrupt, rollback",
            code="invalid_request", param=MULTITASK_HEADER,
        ) from e  # fmt: skip


def _parse(raw: bytes) -> ChatRequest:
    try:
        return ChatRequest.model_validate_json(raw)
    except ValidationError as e:
        err = e.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or None
        raise OpenAIError(
            400, f"{where or 'body'}: {err['msg']}", code="invalid_request", param=where
        ) from e


async def _conversation(
    uses: _Uses, who: Principal, header: str | None, user: str | None, earlier: list[ChatMessage]
) -> str | None:
    """The conversation the run continues (see the module docstring), seeded if new
    (`api.app.completions.Completions.conversation`)."""
    turns = [Turn(m.role, m.text) for m in earlier]
    try:
        return await uses.completions.conversation(who, header, user, turns)
    except ConversationNotFound as e:
        raise OpenAIError(
            404, e.message, code="conversation_not_found", param=CONVERSATION_HEADER
        ) from e
    except ConversationTaken as e:
        raise OpenAIError(409, e.message, code="conversation_taken") from e


async def _complete(
    uses: _Uses,
    started: Started,
    model: str,
    schema: dict[str, Any] | None,
    before: Sequence[ClientEvent],
    after: str,
) -> dict[str, Any]:
    ran = await uses.completions.follow(started.run_id, before, after)
    end = ran.end
    content, extra, usage = ran.answer, {}, {}
    calls: list[dict[str, Any]] = []
    if isinstance(end, ApprovalRequest):
        if end.reason == "client_tool":
            calls = tool_calls_of(end)
        else:
            content += pause_message(end)
        extra = {"agentbus": {"run_id": started.run_id, "status": "suspended", "gate": end.reason}}
    elif isinstance(end, Done):
        if end.status != "done":
            raise _run_failed(end, ran.error)
        content = end.answer if end.answer is not None else content
        if schema is not None:
            content = checked_answer(started.run_id, content, schema)
        usage = end.usage
        extra = {"agentbus": verification(started.run_id, end)}
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:  # the client runs them; the next request's tool messages resume the run
        message |= {"content": content or None, "tool_calls": calls}
    if ran.reasoning:
        message["reasoning_content"] = ran.reasoning
    finish = "tool_calls" if calls else "stop"
    return {
        "id": f"chatcmpl-{started.run_id}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": usage_of(usage),
        **extra,
    }


def _run_failed(done: Done, error: str | None) -> OpenAIError:
    why = f": {error}" if error is not None else ""
    if done.status == "budget_exhausted":  # as OpenAI answers a spent quota
        return OpenAIError(
            429, f"the run {done.run_id} ended {done.status}{why}",
            type="insufficient_quota", code="run_budget_exhausted",
        )  # fmt: skip
    if done.status == "cancelled":  # stopped, or a later question interrupted or rolled it back
        return OpenAIError(
            409, f"the run {done.run_id} was cancelled{why}",
            code="run_cancelled", headers=NO_RETRY,
        )  # fmt: skip
    status = 504 if done.status == "timeout" else 500
    return OpenAIError(
        status, f"the run {done.run_id} ended {done.status}{why}",
        type="server_error", code=f"run_{done.status}",
    )  # fmt: skip


async def _stream(
    uses: _Uses,
    started: Started,
    model: str,
    *,
    include_usage: bool,
    schema: dict[str, Any] | None,
    before: Sequence[ClientEvent] = (),
    after: str = "0-0",
) -> AsyncIterator[str]:
    """The completion's chunks; with a ``response_format`` schema the answer is held back,
    checked when the run is done and sent whole (or the error instead)."""
    chunks = Chunks(started.run_id, model)
    answer = AnswerStream()
    for event in before:  # sent before the pause: only the stream's own state is kept
        answer.deltas(event)
    over = False
    try:
        yield chunks.delta(role="assistant", content="")
        follow = uses.follower.follow(started.run_id, after=after)
        async with contextlib.aclosing(follow) as events:
            async for event in events:
                if event is None:
                    yield ": keep-alive\n\n"
                elif event.type == "reasoning":
                    yield chunks.delta(reasoning_content=event.delta)
                elif isinstance(event, ApprovalRequest | Done):
                    over = True
                    for delta in _held(answer.deltas(event), schema):
                        yield chunks.delta(**delta)
                    for line in _ending(chunks, event, include_usage, schema):
                        yield line
                    break
                else:
                    for delta in _held(answer.deltas(event), schema):
                        yield chunks.delta(**delta)
        yield "data: [DONE]\n\n"
    finally:
        if not over:  # the client went away mid-answer: stop the run it started
            with anyio.CancelScope(shield=True):
                await uses.cancel(started.run_id)


def _held(deltas: list[dict[str, str]], schema: dict[str, Any] | None) -> list[dict[str, str]]:
    """The deltas to send now: all, or with a schema all but the answer (sent checked)."""
    return deltas if schema is None else [d for d in deltas if "content" not in d]


def _ending(
    chunks: Chunks,
    event: ApprovalRequest | Done,
    include_usage: bool,
    schema: dict[str, Any] | None,
) -> list[str]:
    if isinstance(event, ApprovalRequest) and event.reason == "client_tool":
        lines = chunks.tool_calls(tool_calls_of(event))
        return [*lines, chunks.usage({})] if include_usage else lines
    if isinstance(event, ApprovalRequest):
        lines = [chunks.delta(content=pause_message(event)), chunks.delta("stop")]
        return [*lines, chunks.usage({})] if include_usage else lines
    if event.status == "cancelled":
        error = OpenAIError(409, f"the run {event.run_id} was cancelled", code="run_cancelled")
        return [f"data: {json.dumps(error.body())}\n\n"]
    if event.status != "done":
        error = OpenAIError(
            500, f"the run {event.run_id} ended {event.status}",
            type="server_error", code=f"run_{event.status}",
        )  # fmt: skip
        return [f"data: {json.dumps(error.body())}\n\n"]
    lines = [chunks.stop(verification(event.run_id, event))]
    if schema is not None:  # the document, checked, as one delta
        try:
            document = checked_answer(event.run_id, event.answer or "", schema)
        except OpenAIError as e:
            return [f"data: {json.dumps(e.body())}\n\n"]
        lines.insert(0, chunks.delta(content=document))
    return [*lines, chunks.usage(event.usage)] if include_usage else lines
