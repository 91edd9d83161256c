"""A2A: the agent card at ``/.well-known/agent-card.json`` (and under ``/a2a``, for a client
given the endpoint's URL) and JSON-RPC at ``POST /a2a``.

Methods (A2A 1.0 names, and the 0.3 names beside them): ``SendMessage`` (``message/send``),
``SendStreamingMessage`` (``message/stream``), ``GetTask`` (``tasks/get``), ``ListTasks``
(``tasks/list``), ``CancelTask`` (``tasks/cancel``), ``SubscribeToTask``
(``tasks/resubscribe``). The API key is the bearer token and runs start through the same
``RunStarter`` as ``POST /api/v1/runs`` (owner, groups, rate limit, quota, audit).

* A message without a task starts a run: its text is the question, its ``contextId`` the
  conversation (the caller's with that id, or a new one), ``metadata.skill`` one of the
  card's skills (``single``, ``multi``, ``documents``; default ``single``),
  ``metadata.multitask`` what it does if the conversation is busy (as ``multitask`` on
  ``POST /api/v1/runs``; default: the tenant's). Its
  ``messageId`` is the idempotency key: the same message sent again follows the same run.
* A message on a task that is ``input-required`` (a run paused at a gate) is the decision:
  ``approve`` / ``reject``, or ``egress_allow_once`` / ``egress_allow_always`` /
  ``egress_deny``. The run goes on, and the reply streams from the gate. A task that has
  ended takes no more messages (-32004).
* ``ListTasks`` lists the caller's own tasks only (an admin's too: a tenant's runs are read
  through the REST API, where that read is audited).
* Push notifications (`api.http.a2a_push`): the four config methods, and a config given
  with ``SendMessage``, through agentbus's signed webhooks. A deployment with
  ``a2a_push_notifications`` off says ``pushNotifications: false`` and answers them -32003
  (A2A 1.0 section 3.3.4). There is no extended card (-32004).
* Errors are JSON-RPC errors with A2A's codes (`api.http.a2a_rpc`); the API's own code
  rides in ``error.data`` (a ``google.rpc.ErrorInfo``: ``metadata.code``). A missing or bad
  key is HTTP 401.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from a2a.types import a2a_pb2 as a2a
from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from google.protobuf import json_format
from google.protobuf.message import Message as Proto
from pydantic import BaseModel

from agentbus_contracts.events import ApprovalRequest, Done
from api.app import metrics
from api.app.access import RunRef
from api.app.auth import Principal, bearer_token
from api.app.errors import ApiError, BodyTooLarge, RunNotFound, Unauthorized
from api.app.run_view import describe
from api.http import a2a_push
from api.http.a2a_follow import sse, subscribe, updates_after
from api.http.a2a_listing import listing_of, next_token
from api.http.a2a_messages import begin
from api.http.a2a_rpc import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PUSH_NOT_SUPPORTED,
    TASK_NOT_CANCELABLE,
    TASK_NOT_FOUND,
    UNSUPPORTED_OPERATION,
    Call,
    RpcError,
    error_answer,
    parse_params,
    read_call,
)
from api.http.a2a_tasks import TaskUpdates, agent_card, task_of
from api.http.a2a_uses import A2aUses
from api.http.error_kinds import status_of
from api.http.responses import errors
from api.http.routes.common import deps_of

router = APIRouter(tags=["a2a"])
_METHODS = {
    "SendMessage": "send",
    "message/send": "send",
    "SendStreamingMessage": "stream",
    "message/stream": "stream",
    "GetTask": "get",
    "tasks/get": "get",
    "ListTasks": "list",
    "tasks/list": "list",
    "CancelTask": "cancel",
    "tasks/cancel": "cancel",
    "SubscribeToTask": "subscribe",
    "tasks/resubscribe": "subscribe",
    "CreateTaskPushNotificationConfig": "push_create",
    "GetTaskPushNotificationConfig": "push_get",
    "ListTaskPushNotificationConfigs": "push_list",
    "DeleteTaskPushNotificationConfig": "push_delete",
    "tasks/pushNotificationConfig/set": "push_create",
    "tasks/pushNotificationConfig/get": "push_get",
    "tasks/pushNotificationConfig/list": "push_list",
    "tasks/pushNotificationConfig/delete": "push_delete",
    "GetExtendedAgentCard": "extended_card",
    "agent/getAuthenticatedExtendedCard": "extended_card",
}
_CANCEL_WAIT_S = 10.0
_Handler = Callable[[A2aUses, Principal, object], Awaitable[dict[str, Any]]]


def _rpc_of(e: ApiError) -> RpcError:
    code = {"run_not_found": TASK_NOT_FOUND, "not_owner": TASK_NOT_FOUND}
    code["invalid_request"] = code["bad_decision"] = INVALID_PARAMS  # the message's text
    message = f"{e.message} ({e.hint})" if e.hint else e.message  # what to do, as on /mcp
    return RpcError(code.get(e.code, -32000), message, {"code": e.code, "status": status_of(e)})


#: The card's path under a base URL: the domain's (A2A 1.0 section 8.2), and the JSON-RPC
#: endpoint's too, for a client given the endpoint as the agent's URL (a2a-sdk's card
#: resolver and the A2A TCK's card checks read it there).
CARD_PATH = "/.well-known/agent-card.json"


@router.get(CARD_PATH)
@router.get(f"/a2a{CARD_PATH}", include_in_schema=False)
async def card(request: Request) -> Response:
    """The agent card: the skills, the JSON-RPC endpoint, bearer API keys."""
    push = deps_of(request).push_configs is not None
    return JSONResponse(agent_card(str(request.base_url).rstrip("/"), request.app.version, push))


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
    deps = A2aUses.of(deps_of(request))
    call: Call | None = None
    try:
        call = read_call(await request.body())
        method = _METHODS.get(call.method)
        if method is None:
            raise RpcError(METHOD_NOT_FOUND, f"no method {call.method[:80]!r}")
        try:
            who = await deps.auth.authenticate(bearer_token(request.headers.get("authorization")))
        except ApiError as e:
            status = status_of(e)
            refused = RpcError(INVALID_REQUEST, e.message, {"code": e.code, "status": status})
            return error_answer(call.id, refused, status)
        if method in ("stream", "subscribe"):
            updates = await _STREAMS[method](deps, who, call.params)
            return StreamingResponse(sse(call.id, updates), media_type="text/event-stream")
        result = await _HANDLERS[method](deps, who, call.params)
        return JSONResponse({"jsonrpc": "2.0", "id": call.id, "result": result})
    except RpcError as e:
        return error_answer(call.id if call is not None else e.call_id, e)
    except ApiError as e:
        metrics.REJECTED.labels(e.code).inc()
        return error_answer(call.id if call is not None else None, _rpc_of(e))


def _answer(message: Proto) -> dict[str, Any]:
    return json_format.MessageToDict(message)


async def _send(deps: A2aUses, who: Principal, params: object) -> dict[str, Any]:
    """``SendMessage``: the task once the run has ended or paused (or at once, if asked)."""
    given = parse_params(params, a2a.SendMessageRequest())
    _push_allowed(deps, given)
    history = _history_length(given.configuration)  # checked before the run starts
    run_id, before, _ = await begin(deps, who, given)
    after = before[-1][0] if before else "0-0"
    await _push_with(deps, who, given, run_id, after)
    if not given.configuration.return_immediately:
        async with contextlib.aclosing(deps.follower.follow(run_id, after=after)) as feed:
            async for event in feed:
                if isinstance(event, ApprovalRequest | Done):
                    break
    task = await _task(deps, who, run_id, history)
    return _answer(a2a.SendMessageResponse(task=task))


async def _stream(
    deps: A2aUses, who: Principal, params: object
) -> AsyncIterator[a2a.StreamResponse]:
    """``SendStreamingMessage``: the task, then its updates until it ends or pauses."""
    given = parse_params(params, a2a.SendMessageRequest())
    _push_allowed(deps, given)
    run_id, before, context = await begin(deps, who, given)
    after = before[-1][0] if before else "0-0"
    await _push_with(deps, who, given, run_id, after)
    task = TaskUpdates(run_id, context)
    for _, event in before:  # what the client was sent before the gate: not again
        task.of(event)

    async def updates() -> AsyncIterator[a2a.StreamResponse]:
        yield task.first()
        async for update in updates_after(deps, task, after):
            yield update

    return updates()


async def _subscribe(
    deps: A2aUses, who: Principal, params: object
) -> AsyncIterator[a2a.StreamResponse]:
    """``SubscribeToTask``: the task as it stands, then its updates (`api.http.a2a_follow`)."""
    task_id = parse_params(params, a2a.SubscribeToTaskRequest()).id
    return await subscribe(deps, await _visible(deps, who, task_id))


_STREAMS = {"stream": _stream, "subscribe": _subscribe}


def _push_allowed(deps: A2aUses, given: a2a.SendMessageRequest) -> None:
    config = given.configuration
    if config.HasField("task_push_notification_config") and deps.push_configs is None:
        raise _push_refused()


async def _push_with(
    deps: A2aUses, who: Principal, given: a2a.SendMessageRequest, run_id: str, after: str
) -> None:
    """Keep the message's push config, followed from the first event this message causes."""
    config = given.configuration
    if config.HasField("task_push_notification_config"):
        ref = await _visible(deps, who, run_id, change=True)
        await a2a_push.attach(deps, who, ref, config.task_push_notification_config, cursor=after)


def _history_length(config: a2a.SendMessageConfiguration) -> int | None:
    if not config.HasField("history_length"):
        return None
    if config.history_length < 0:
        raise RpcError(INVALID_PARAMS, f"historyLength: 0 or more, got {config.history_length}")
    return config.history_length


async def _task(
    deps: A2aUses, who: Principal, task_id: str, history_length: int | None = None
) -> a2a.Task:
    ref = await _visible(deps, who, task_id)
    record = ref.record
    run = describe(ref.run_id, record)
    updated = record.updated_at if record is not None else None
    return task_of(run, history_length=history_length, updated_at=updated)


async def _visible(deps: A2aUses, who: Principal, task_id: str, *, change: bool = False) -> RunRef:
    try:
        return await deps.access.visible(who, task_id, read=None if change else "read_run")
    except RunNotFound as e:
        raise RpcError(TASK_NOT_FOUND, f"no task {task_id[:80]!r}") from e


async def _get(deps: A2aUses, who: Principal, params: object) -> dict[str, Any]:
    """``GetTask``: the task, with its history (``historyLength``: the most recent N)."""
    given = parse_params(params, a2a.GetTaskRequest())
    history = given.history_length if given.HasField("history_length") else None
    if history is not None and history < 0:
        raise RpcError(INVALID_PARAMS, f"historyLength: 0 or more, got {history}")
    return _answer(await _task(deps, who, given.id, history))


async def _list(deps: A2aUses, who: Principal, params: object) -> dict[str, Any]:
    """``ListTasks``: the caller's own tasks, most recently updated first, by pages."""
    listing = listing_of(params)
    found, total = await deps.access.find_own(
        who,
        conversation_id=listing.conversation_id,
        statuses=listing.statuses,
        updated_since=listing.updated_since,
        limit=listing.page_size + 1,
        after=listing.after,
    )
    page = found[: listing.page_size]
    tasks = [
        task_of(
            describe(r.id, r),
            history_length=listing.history_length,
            updated_at=r.updated_at,
            artifacts=listing.include_artifacts,
        )
        for r in page
    ]
    return {
        "tasks": [_answer(t) for t in tasks],
        "nextPageToken": next_token(page, more=len(found) > listing.page_size),
        "pageSize": len(tasks),  # as a2a-java and the TCK read "the page size used"
        "totalSize": total,
    }


async def _cancel(deps: A2aUses, who: Principal, params: object) -> dict[str, Any]:
    """``CancelTask``: ask the run to stop, and answer its task once it has (or in 10 s)."""
    task_id = parse_params(params, a2a.CancelTaskRequest()).id
    ref = await _visible(deps, who, task_id, change=True)
    if ref.record is not None and ref.record.is_terminal:
        ended = ref.record.status.value
        raise RpcError(TASK_NOT_CANCELABLE, f"task {task_id!r} already ended ({ended})")
    await deps.cancel(task_id)
    loop = asyncio.get_running_loop()
    until = loop.time() + _CANCEL_WAIT_S
    while loop.time() < until:
        record = await deps.access.stored(who, task_id)
        if record is not None and record.is_terminal:
            return _answer(task_of(describe(task_id, record), updated_at=record.updated_at))
        await asyncio.sleep(0.1)
    return _answer(await _task(deps, who, task_id))


def _push_refused() -> RpcError:
    return RpcError(
        PUSH_NOT_SUPPORTED,
        "push notifications are not supported by this deployment (the agent card says "
        "pushNotifications: false); follow a task with SubscribeToTask or poll it with GetTask",
    )


def _push(handler: _Handler) -> _Handler:
    """A push config method: -32003 where the deployment has no webhook schedule."""

    async def call(deps: A2aUses, who: Principal, params: object) -> dict[str, Any]:
        if deps.push_configs is None:
            raise _push_refused()
        return await handler(deps, who, params)

    return call


async def _extended_card(deps: A2aUses, who: Principal, params: object) -> dict[str, Any]:
    """``GetExtendedAgentCard``: not offered (-32004, A2A 1.0 section 3.3.4)."""
    raise RpcError(UNSUPPORTED_OPERATION, "there is no extended agent card: read the public one")


_HANDLERS: dict[str, _Handler] = {
    "send": _send,
    "get": _get,
    "list": _list,
    "cancel": _cancel,
    "push_create": _push(a2a_push.create),
    "push_get": _push(a2a_push.get),
    "push_list": _push(a2a_push.listing),
    "push_delete": _push(a2a_push.delete),
    "extended_card": _extended_card,
}
