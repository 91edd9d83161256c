"""The gateway role: runs a researcher's tool calls through the policy chain.

Each call's outcome goes back to the calling agent as a TOOL message (data, never
instructions). A side-effecting tool runs at most once per call id: its outcome is
recorded in Redis under the call id before the step commits, and a redelivered call
returns the recorded outcome instead of running again.
"""

from __future__ import annotations

import json
from typing import Any

from bus import keys
from bus.commands import AgentTask, Command, ToolCallBatch, ToolCallRequest
from bus.events import ClientEvent, ToolCallStarted, ToolResult
from bus.runtime.context import StepContext, StepResult
from bus.runtime.worker import Handler
from gateway.chain import invoke
from gateway.context import CallContext, CallPolicy, GatewayDeps
from gateway.egress.policy import EgressPolicy
from gateway.outcome import ToolOutcome
from gateway.redact import redact


def tool_message(call: ToolCallRequest, outcome: ToolOutcome) -> dict[str, Any]:
    """The TOOL-role message the model reads: the outcome as JSON data."""
    body: dict[str, Any] = {"status": outcome.status, "code": outcome.code}
    if outcome.message:
        body["message"] = outcome.message
    if outcome.status == "ok":
        body["result"] = outcome.result
    if outcome.truncated:
        body["truncated"] = True
    content = json.dumps(body, ensure_ascii=False, default=str)
    return {"role": "tool", "tool_call_id": call.call_id, "name": call.name, "content": content}


def make_gateway_handler(deps: GatewayDeps, egress: EgressPolicy) -> Handler:
    """The gateway role's handler, wired to its registry and egress defaults."""

    async def handle(ctx: StepContext, command: Command) -> StepResult:
        batch = command.payload
        if not isinstance(batch, ToolCallBatch):
            raise TypeError(f"gateway got a {batch.kind} payload")
        state = batch.state
        policy = CallPolicy(approve_high_risk=state.settings.approve_high_risk, egress=egress)
        call_ctx = CallContext(
            tenant_id=command.tenant_id,
            subject=command.subject,
            run_id=command.run_id,
            agent=batch.agent,
            policy=policy,
            deps=deps,
        )
        events: list[ClientEvent] = []
        messages = list(state.messages)
        for call in batch.calls:
            await ctx.emit(
                ToolCallStarted(
                    run_id=command.run_id,
                    step_id=command.step_id,
                    agent=batch.agent,
                    call_id=call.call_id,
                    tool=call.name,
                    args=redact(call.arguments),
                )
            )
            outcome = await _run_once(ctx, call, call_ctx, deps)
            events.append(_result_event(command, batch.agent, call, outcome))
            messages.append(tool_message(call, outcome))
        new_state = state.model_copy(
            update={"messages": messages, "tool_hops": state.tool_hops + 1}
        )
        back = command.follow(keys.Role(batch.agent), AgentTask(state=new_state))
        return StepResult(next=[back], events=events)

    return handle


async def _run_once(
    ctx: StepContext, call: ToolCallRequest, call_ctx: CallContext, deps: GatewayDeps
) -> ToolOutcome:
    side_effects = call.name in deps.registry and deps.registry.get(call.name).spec.side_effects
    if not side_effects:
        return await invoke(call, call_ctx)
    record = keys.run_call(ctx.command.run_id, ctx.command.shard, call.call_id)
    recorded = await ctx.redis.get(record)
    if recorded is not None:
        return ToolOutcome.model_validate_json(recorded)
    outcome = await invoke(call, call_ctx)
    await ctx.redis.set(record, outcome.model_dump_json(), ex=ctx.settings.run_ttl_s)
    return outcome


def _result_event(
    command: Command, agent: str, call: ToolCallRequest, outcome: ToolOutcome
) -> ToolResult:
    return ToolResult(
        run_id=command.run_id,
        step_id=command.step_id,
        agent=agent,
        call_id=call.call_id,
        tool=call.name,
        status=outcome.status,
        code=outcome.code,
        message=outcome.message,
        result=redact(outcome.result) if outcome.status == "ok" else None,
    )
