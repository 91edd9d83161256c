"""``ask`` as an MCP task (MCP 2025-11-25, tasks): the run is the task.

The server declares ``capabilities.tasks`` (``requests.tools.call`` and ``cancel``) and
``ask`` declares ``execution.taskSupport: "optional"``. A ``tools/call`` of ``ask`` with a
``task`` field starts the run exactly as a plain call does and answers at once with a
``CreateTaskResult`` whose ``taskId`` is the run id; then:

* ``tasks/get``: the task's status from the run's (``working``; ``input_required`` while
  it waits at a gate, its ``statusMessage`` saying how to decide it with ``resume``;
  ``completed``, ``failed``, ``cancelled``), ``createdAt``, ``lastUpdatedAt``, ``ttl`` (the
  run's key lifetime) and ``pollInterval``;
* ``tasks/result``: waits for the run to end (or pause at a gate) and answers what the
  plain call would have: the checked answer, or an ``isError`` result saying why not;
* ``tasks/cancel``: cancels the run; a task that has ended is -32602.

Only the run's owner reaches its task; another's, or an unknown id, is -32602 ("task not
found"). Task ids are run ids, so a task outlives the request and the process that made it
(any replica answers ``tasks/get``). Other tools refuse a ``task`` field (-32601, as the
specification says for a tool without task support).
"""

from __future__ import annotations

import asyncio
import contextlib
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

from mcp.server.context import CallNext, HandlerResult, ServerMiddleware, ServerRequestContext
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS, METHOD_NOT_FOUND
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agentbus_contracts.events import ApprovalRequest, Done
from agentbus_contracts.ids import RUN_ID_PATTERN, TEAM_NAME_PATTERN
from agentbus_contracts.questions import Multitask, QuestionSettings
from api.app import metrics
from api.app.access import RunRef
from api.app.ask import Ask
from api.app.auth import Principal
from api.app.errors import ApiError, NotOwner, RunNotFound
from api.http.mcp_tools import PRINCIPAL_STATE, RunProgress, finished, gate_message, refusal
from bus.json_values import is_array, is_object

if TYPE_CHECKING:
    from api.http.mcp_uses import McpUses

TASKS_CAPABILITY: dict[str, Any] = {"cancel": {}, "requests": {"tools": {"call": {}}}}
RELATED_TASK = "io.modelcontextprotocol/related-task"
POLL_MS = 1000
_STATUS = {
    "queued": "working",
    "running": "working",
    "suspended": "input_required",
    "done": "completed",
    "cancelled": "cancelled",
}
_CANCEL_WAIT_S = 10.0


class AskArgs(BaseModel):
    """``ask``'s arguments (as the tool declares them), read for a task-augmented call."""

    model_config = ConfigDict(extra="forbid")

    question: str = Field(min_length=1)
    mode: Literal["single", "multi"] | None = None
    accuracy: Literal["standard", "accurate"] | None = None
    conversation_id: str | None = Field(default=None, pattern=RUN_ID_PATTERN)
    multitask: Multitask | None = None
    team: str | None = Field(default=None, pattern=TEAM_NAME_PATTERN)


class RunTasks(ServerMiddleware[Any]):
    """Serves ``ask`` as a task, and the ``tasks/*`` methods, in front of the SDK.

    Args:
        deps: the use cases it calls.
    """

    def __init__(self, deps: McpUses) -> None:
        self._deps = deps

    async def __call__(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        """Answer the task methods here; add the task declarations to what the SDK answers."""
        params: dict[str, Any] = dict(ctx.params or {})
        match ctx.method:
            case "initialize":
                return _with_capability(await call_next(ctx))
            case "tools/list":
                return _with_task_support(await call_next(ctx))
            case "tools/call" if params.get("task") is not None:
                if params.get("name") != "ask":
                    raise MCPError(
                        METHOD_NOT_FOUND, f"tool {params.get('name')!r}: no task support"
                    )
                return await self._start(ctx, params)
            case "tasks/get":
                ref = await self._own(ctx, params)
                return task_of(self._deps, ref)
            case "tasks/result":
                return await self._result(_caller(ctx), await self._own(ctx, params))
            case "tasks/cancel":
                return await self._cancel(ctx, await self._own(ctx, params))
            case _:
                return await call_next(ctx)

    async def _start(
        self, ctx: ServerRequestContext[Any, Any], params: dict[str, Any]
    ) -> HandlerResult:
        who = _caller(ctx)
        try:
            args = AskArgs.model_validate(params.get("arguments") or {})
        except ValidationError as e:
            raise MCPError(INVALID_PARAMS, f"ask: {e.errors()[0]['msg']}") from e
        chosen = {"mode": args.mode, "accuracy": args.accuracy, "multitask": args.multitask}
        chosen["team"] = args.team
        settings = QuestionSettings.model_validate({k: v for k, v in chosen.items() if v})
        try:
            started = await self._deps.starter.start(
                who, Ask(args.question, args.conversation_id, settings)
            )
            ref = await self._deps.access.visible(who, started.run_id, read=None)
        except ApiError as e:
            metrics.REJECTED.labels(e.code).inc()
            return {"content": [{"type": "text", "text": str(refusal(e))}], "isError": True}
        metrics.RUNS_STARTED.labels("mcp").inc()
        return {"task": task_of(self._deps, ref)}

    async def _own(self, ctx: ServerRequestContext[Any, Any], params: dict[str, Any]) -> RunRef:
        task_id = params.get("taskId")
        if not isinstance(task_id, str):
            raise MCPError(INVALID_PARAMS, "taskId: a string is required")
        try:
            return await self._deps.access.visible(_caller(ctx), task_id, read=None)
        except (RunNotFound, NotOwner) as e:
            raise MCPError(
                INVALID_PARAMS, f"Failed to retrieve task: task not found ({task_id[:80]!r})"
            ) from e

    async def _paused(self, who: Principal, run_id: str) -> bool:
        record = await self._deps.access.stored(who, run_id)
        return record is not None and record.status.value == "suspended"

    async def _result(self, who: Principal, ref: RunRef) -> HandlerResult:
        deps = self._deps
        progress = RunProgress(ref.run_id)
        end: ApprovalRequest | Done | None = None
        async with contextlib.aclosing(deps.follower.follow(ref.run_id, after="0-0")) as feed:
            async for event in feed:
                if isinstance(event, Done) or (
                    isinstance(event, ApprovalRequest) and await self._paused(who, ref.run_id)
                ):
                    end = event
                    break
                if event is not None:  # a gate decided since is passed, as its events go on
                    progress.messages(event)
        conversation = ref.record.conversation_id if ref.record is not None else None
        result: dict[str, Any]
        try:
            if end is None:
                raise ToolError(
                    f"unavailable: the events of run {ref.run_id} ended before the run did"
                )
            if isinstance(end, ApprovalRequest):
                raise ToolError(gate_message(end))
            result = finished(progress, end, conversation).model_dump(
                mode="json", by_alias=True, exclude_none=True
            )
        except ToolError as e:
            result = {"content": [{"type": "text", "text": str(e)}], "isError": True}
        result["_meta"] = {RELATED_TASK: {"taskId": ref.run_id}}
        return result

    async def _cancel(self, ctx: ServerRequestContext[Any, Any], ref: RunRef) -> HandlerResult:
        if ref.record is not None and ref.record.is_terminal:
            ended = ref.record.status.value
            raise MCPError(
                INVALID_PARAMS, f"Cannot cancel task: already in terminal status ({ended})"
            )
        deps = self._deps
        await deps.cancel(ref.run_id)
        loop = asyncio.get_running_loop()
        until = loop.time() + _CANCEL_WAIT_S
        who = _caller(ctx)
        while loop.time() < until:
            now = await deps.access.visible(who, ref.run_id, read=None)
            if now.record is not None and now.record.is_terminal:
                return task_of(deps, now)
            await asyncio.sleep(0.1)
        return task_of(deps, await deps.access.visible(who, ref.run_id, read=None))


def task_of(deps: McpUses, ref: RunRef) -> dict[str, Any]:
    """The task a run is, as ``tasks/get`` answers it."""
    record = ref.record
    status = "working" if record is None else _STATUS.get(record.status.value, "failed")
    task: dict[str, Any] = {
        "taskId": ref.run_id,
        "status": status,
        "ttl": deps.run_ttl_s * 1000,
        "pollInterval": POLL_MS,
    }
    if record is not None:
        task["createdAt"] = record.created_at.isoformat()
        task["lastUpdatedAt"] = record.updated_at.isoformat()
        if status == "input_required":
            task["statusMessage"] = (
                f'the run waits at a gate: call the resume tool with run_id "{ref.run_id}" '
                "and a decision, then tasks/result"
            )
    else:  # intake has not stored it yet: it was created just now
        now = datetime.now(UTC).isoformat()
        task["createdAt"] = task["lastUpdatedAt"] = now
    return task


def _caller(ctx: ServerRequestContext[Any, Any]) -> Principal:
    state: Any = getattr(ctx.request, "scope", {}).get("state") or {}
    who = state.get(PRINCIPAL_STATE)
    if not isinstance(who, Principal):  # only reachable if the endpoint is bypassed
        raise MCPError(INVALID_PARAMS, "unauthorized: send an agentbus API key as the bearer token")
    return who


def _with_capability(result: HandlerResult) -> HandlerResult:
    if isinstance(result, dict):
        caps = result.setdefault("capabilities", {})
        if isinstance(caps, dict):
            caps["tasks"] = TASKS_CAPABILITY
    return result


def _with_task_support(result: HandlerResult) -> HandlerResult:
    tools: object = result.get("tools") if isinstance(result, dict) else None
    for tool in tools if is_array(tools) else []:
        if is_object(tool) and tool.get("name") == "ask":
            tool["execution"] = {"taskSupport": "optional"}
    return result
