"""A2A: the agent card at ``/.well-known/agent-card.json`` and JSON-RPC at ``POST /a2a``.

Methods (A2A 1.0 names, and the 0.3 names beside them): ``SendMessage`` (``message/send``),
``SendStreamingMessage`` (``message/stream``), ``GetTask`` (``tasks/get``), ``CancelTask``
(``tasks/cancel``). The API key is the bearer token and runs start through the same
``RunStarter`` as ``POST /api/v1/runs`` (owner, groups, rate limit, quota, audit).

* A message without a task starts a run: its text is the question, its ``contextId`` the
  conversation (the caller's with that id, or a new one), ``metadata.skill`` one of the
  card's skills (``single``, ``multi``, ``documents``; default ``single``),
  ``metadata.multitask`` what it does if the conversation is busy (as ``multitask`` on
  ``POST /api/v1/runs``; default: the tenant's). Its
  ``messageId`` is the idempotency key: the same message sent again follows the same run.
* A message on a task that is ``input-required`` (a run paused at a gate) is the decision:
  ``approve`` / ``reject``, or ``egress_allow_once`` / ``egress_allow_always`` /
  ``egress_deny``. The run goes on, and the reply streams from the gate.
* Errors are JSON-RPC errors with A2A's codes (-32001 task not found, -32002 not
  cancelable, -32004 unsupported, -32602 invalid params, -32601 no such method); the API's
  own code rides in ``error.data`` (a ``google.rpc.ErrorInfo``: ``metadata.code``). A
  missing or bad key is HTTP 401.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar, get_args

from a2a.types import a2a_pb2 as a2a
from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from google.protobuf import json_format
from google.protobuf.message import Message as Proto
from pydantic import BaseModel, ValidationError

from api.app import metrics
from api.app.access import visible_run
from api.app.ask import Ask
from api.app.auth import Principal, bearer_token
from api.app.deps import ApiDeps
from api.app.errors import ApiError, BodyTooLarge, RunNotFound, Unauthorized
from api.app.gate_actions import resume_run
from api.app.run_follow import follow_run
from api.app.run_view import describe
from api.http.a2a_tasks import SKILLS, TaskUpdates, agent_card, task_of
from api.http.responses import errors
from api.http.routes.common import deps_of
from bus import keys, wire
from bus.commands import RUN_ID_PATTERN
from bus.events import ApprovalRequest, ClientEvent, Done, parse_event
from bus.json_values import is_object
from bus.publish import request_cancel
from bus.run_state import Multitask, QuestionSettings

router = APIRouter(tags=["a2a"])
_METHODS = {
    "SendMessage": "send",
    "message/send": "send",
    "SendStreamingMessage": "stream",
    "message/stream": "stream",
    "GetTask": "get",
    "tasks/get": "get",
    "CancelTask": "cancel",
    "tasks/cancel": "cancel",
}
_CANCEL_WAIT_S = 10.0
_ERROR_INFO_TYPE = "type.googleapis.com/google.rpc.ErrorInfo"
_ID = re.compile(RUN_ID_PATTERN)
_M = TypeVar("_M", bound=Proto)


class RpcError(Exception):
    """A JSON-RPC error answer (A2A's codes)."""

    def __init__(self, code: int, message: str, data: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code, self.message, self.data = code, message, data


def _rpc_of(e: ApiError) -> RpcError:
    code = {"run_not_found": -32001, "not_owner": -32001, "invalid_request": -32602}
    return RpcError(code.get(e.code, -32000), e.message, {"code": e.code, "status": e.status})


def _error_info(data: dict[str, Any]) -> list[dict[str, Any]]:
    """A2A 1.0's error details: a google.rpc.ErrorInfo with the API's code in its metadata."""
    meta = {k: str(v) for k, v in data.items()}
    reason = str(data.get("code", "error")).upper()
    info = {"@type": _ERROR_INFO_TYPE, "reason": reason, "domain": "agentbus", "metadata": meta}
    return [info]


@router.get("/.well-known/agent-card.json")
async def card(request: Request) -> Response:
    """The agent card: the skills, the JSON-RPC endpoint, bearer API keys."""
    return JSONResponse(agent_card(str(request.base_url).rstrip("/"), request.app.version))


class RpcErrorDetail(BaseModel):
    """A JSON-RPC error: A2A's code, a message, and A2A 1.0's ``ErrorInfo`` details."""

    code: int
    message: str
    data: list[dict[str, Any]] | None = None


class RpcErrorAnswer(BaseModel):
    """A JSON-RPC error answer (HTTP 200, or the API's status when the key is refused)."""

    jsonrpc: str
    id: Any = None
    error: RpcErrorDetail


#: A refused key is answered in JSON-RPC under its HTTP status; a body over the limit is
#: refused before it is read, in the API's own error shape.
_REFUSALS = {**errors(Unauthorized, model=RpcErrorAnswer), **errors(BodyTooLarge)}


#: The body is read by the route itself (errors in JSON-RPC's shape): its schema is given.
_CALL = {
    "requestBody": {
        "required": True,
        "content": {
            "application/json": {
                "schema": {
                    "type": "object",
                    "required": ["jsonrpc", "method"],
                    "properties": {
                        "jsonrpc": {"const": "2.0"},
                        "id": {"type": ["string", "integer", "null"]},
                        "method": {"enum": sorted(_METHODS)},
                        "params": {"type": "object"},
                    },
                }
            }
        },
    }
}


@router.post("/a2a", responses=_REFUSALS, openapi_extra=_CALL)
async def rpc(request: Request) -> Response:
    """One A2A JSON-RPC call."""
    deps = deps_of(request)
    call_id: Any = None
    try:
        call: object = json.loads(await request.body())
        if not is_object(call) or call.get("jsonrpc") != "2.0":
            raise RpcError(-32600, "not a JSON-RPC 2.0 request")
        call_id = call.get("id")
        method = _METHODS.get(str(call.get("method")))
        if method is None:
            raise RpcError(-32601, f"no method {str(call.get('method'))[:80]!r}")
        try:
            who = await deps.auth.authenticate(bearer_token(request.headers.get("authorization")))
        except ApiError as e:
            data = _error_info({"code": e.code, "status": e.status})
            error = {"code": -32600, "message": e.message, "data": data}
            return JSONResponse({"jsonrpc": "2.0", "id": call_id, "error": error}, e.status)
        params: object = call.get("params") or {}
        if method == "stream":
            updates = await _stream(deps, who, _parse(params, a2a.SendMessageRequest()))
            return StreamingResponse(_sse(call_id, updates), media_type="text/event-stream")
        handlers: dict[str, Callable[[], Awaitable[Proto]]] = {
            "send": lambda: _send(deps, who, _parse(params, a2a.SendMessageRequest())),
            "get": lambda: _get(deps, who, _parse(params, a2a.GetTaskRequest()).id),
            "cancel": lambda: _cancel(deps, who, _parse(params, a2a.CancelTaskRequest()).id),
        }
        result = json_format.MessageToDict(await handlers[method]())
        return JSONResponse({"jsonrpc": "2.0", "id": call_id, "result": result})
    except ValueError:  # not JSON, or not UTF-8 (UnicodeDecodeError) at all
        return _error(None, RpcError(-32700, "the body is not JSON"))
    except RpcError as e:
        return _error(call_id, e)
    except ApiError as e:
        metrics.REJECTED.labels(e.code).inc()
        return _error(call_id, _rpc_of(e))


def _error(call_id: Any, e: RpcError) -> Response:
    error: dict[str, Any] = {"code": e.code, "message": e.message}
    if e.data:
        error["data"] = _error_info(e.data)
    return JSONResponse({"jsonrpc": "2.0", "id": call_id, "error": error})


def _parse(params: object, into: _M) -> _M:
    if not is_object(params):
        raise RpcError(-32602, "params must be an object")
    try:
        return json_format.ParseDict(params, into, ignore_unknown_fields=True)
    except json_format.ParseError as e:
        raise RpcError(-32602, f"params: {e}") from e


async def _send(deps: ApiDeps, who: Principal, given: a2a.SendMessageRequest) -> Proto:
    """``SendMessage``: the task once the run has ended or paused (or at once, if asked)."""
    run_id, before, _ = await _begin(deps, who, given)
    after = before[-1][0] if before else "0-0"
    if not given.configuration.return_immediately:
        shard = keys.shard_of(run_id, deps.bus.shards)
        async with contextlib.aclosing(follow_run(deps, run_id, shard, after=after)) as feed:
            async for event in feed:
                if isinstance(event, ApprovalRequest | Done):
                    break
    return a2a.SendMessageResponse(task=await _get(deps, who, run_id))


async def _stream(
    deps: ApiDeps, who: Principal, given: a2a.SendMessageRequest
) -> AsyncIterator[a2a.StreamResponse]:
    """``SendStreamingMessage``: the task, then its updates until it ends or pauses."""
    run_id, before, context = await _begin(deps, who, given)
    after = before[-1][0] if before else "0-0"

    async def updates() -> AsyncIterator[a2a.StreamResponse]:
        task = TaskUpdates(run_id, context)
        for _, event in before:  # what the client was sent before the gate: not again
            task.of(event)
        yield task.first()
        shard = keys.shard_of(run_id, deps.bus.shards)
        async with contextlib.aclosing(follow_run(deps, run_id, shard, after=after)) as feed:
            async for event in feed:
                if event is None:
                    continue
                if isinstance(event, ApprovalRequest | Done):
                    for update in task.ended(event):
                        yield update
                    return
                for update in task.of(event):
                    yield update

    return updates()


async def _sse(call_id: Any, updates: AsyncIterator[a2a.StreamResponse]) -> AsyncIterator[str]:
    async for update in updates:
        doc = {"jsonrpc": "2.0", "id": call_id, "result": json_format.MessageToDict(update)}
        yield f"data: {json.dumps(doc)}\n\n"


async def _begin(
    deps: ApiDeps, who: Principal, given: a2a.SendMessageRequest
) -> tuple[str, list[tuple[str, ClientEvent]], str]:
    """Start a run for the message, or decide the gate of the task it names: the run, its
    events (with their ids) before this message, its context."""
    message = given.message
    text = "\n".join(p.text for p in message.parts if p.text).strip()
    if not text:
        raise RpcError(-32602, "message.parts: a text part is required")
    if message.task_id:
        return await _decide(deps, who, message.task_id, text)
    if message.context_id and not _ok(message.context_id):
        raise RpcError(-32602, "message.contextId: 1-64 letters, digits, _ or -")
    metadata = _metadata(given)
    skill = metadata.get("skill", "single")
    if skill not in SKILLS:
        raise RpcError(-32602, f"metadata.skill: one of {', '.join(SKILLS)}")
    settings = _settings(SKILLS[skill], metadata.get("multitask"))
    ask = Ask(text, message.context_id or None, settings)
    idem = f"a2a:{message.message_id}" if message.message_id else None
    started = await deps.starter.start(who, ask, idempotency_key=idem)
    if not started.replayed:
        metrics.RUNS_STARTED.labels("a2a").inc()
    return started.run_id, [], started.conversation_id


async def _decide(
    deps: ApiDeps, who: Principal, task_id: str, decision: str
) -> tuple[str, list[tuple[str, ClientEvent]], str]:
    ref = await visible_run(deps, who, task_id, read=None)
    if ref.record is None or ref.record.status.value != "suspended":
        raise RpcError(-32004, f"task {task_id!r} is not waiting for input")
    # The run is paused: nothing is added to its events until the decision below.
    rows = await deps.redis.xrange(keys.run_events(task_id, ref.shard))
    await resume_run(deps, who, task_id, decision.lower())
    before = [(_id(entry_id), parse_event(wire.raw_data(f))) for entry_id, f in rows]
    return task_id, before, ref.record.conversation_id or ""


def _settings(skill: dict[str, str], multitask: object) -> QuestionSettings:
    """The skill's settings, with ``metadata.multitask`` when the message sets it."""
    chosen: dict[str, object] = dict(skill)
    if multitask is not None:
        chosen["multitask"] = multitask
    try:
        return QuestionSettings.model_validate(chosen)
    except ValidationError as e:
        allowed = ", ".join(get_args(Multitask))
        raise RpcError(-32602, f"metadata.multitask: one of {allowed}") from e


def _id(entry_id: bytes | str) -> str:
    return entry_id.decode() if isinstance(entry_id, bytes) else entry_id


def _metadata(given: a2a.SendMessageRequest) -> dict[str, Any]:
    doc: object = json_format.MessageToDict(given.metadata) if given.HasField("metadata") else {}
    return doc if is_object(doc) else {}


def _ok(value: str) -> bool:
    return _ID.fullmatch(value) is not None


async def _get(deps: ApiDeps, who: Principal, task_id: str) -> a2a.Task:
    try:
        ref = await visible_run(deps, who, task_id)
    except RunNotFound as e:
        raise RpcError(-32001, f"no task {task_id[:80]!r}") from e
    return task_of(describe(ref.run_id, ref.record))


async def _cancel(deps: ApiDeps, who: Principal, task_id: str) -> a2a.Task:
    """``CancelTask``: ask the run to stop, and answer its task once it has (or in 10 s)."""
    try:
        ref = await visible_run(deps, who, task_id, read=None)
    except RunNotFound as e:
        raise RpcError(-32001, f"no task {task_id[:80]!r}") from e
    if ref.record is not None and ref.record.is_terminal:
        raise RpcError(-32002, f"task {task_id!r} already ended ({ref.record.status.value})")
    await request_cancel(deps.redis, task_id, deps.bus)
    loop = asyncio.get_running_loop()
    until = loop.time() + _CANCEL_WAIT_S
    while loop.time() < until:
        record = await deps.runs.get(who.scope, task_id)
        if record is not None and record.is_terminal:
            return task_of(describe(task_id, record))
        await asyncio.sleep(0.1)
    return await _get(deps, who, task_id)
