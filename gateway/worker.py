"""The gateway role: runs a batch of tool calls through the policy chain.

Each call's outcome goes back to the calling agent as a TOOL message (data, never
instructions), or, for a batch sent with ``then="end"`` (``agentbus tools call``), ends the
run after its ``tool_result`` events. The tenant's policy (enabled tools, egress, MCP
servers) is looked up once per batch through the `TenantPolicies` port.

Every call's audit record leaves with the step: on the bus (``audit_ledger``) it is a
ledger record in the step's commit, which a recorder appends to the hash-chained log in
batches, so the log write is off the tool step's critical path and lands exactly when the
step commits. A side-effecting tool runs at most once per call id: its outcome, with its
audit record, is stored in Redis under the call id before the step commits; a redelivered
call returns the stored outcome and record instead of running again.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from typing import Any

from pydantic import BaseModel, ConfigDict

from bus import keys
from bus.commands import AgentTask, Command, RunState, ToolCallBatch, ToolCallRequest
from bus.events import ClientEvent, Done, ToolCallStarted, ToolResult
from bus.ledger import LedgerRecord
from bus.runtime.context import StepContext, StepResult
from bus.runtime.worker import Handler
from gateway.audit import audit_record
from gateway.chain import invoke_recorded
from gateway.context import CallContext, CallPolicy, GatewayDeps
from gateway.egress.policy import EgressPolicy
from gateway.mcp.hub import McpHub
from gateway.outcome import AuditRecord, ToolOutcome
from gateway.ports import TenantPolicies, TenantPolicy
from gateway.redact import redact


class RecordedCall(BaseModel):
    """What Redis holds under a side-effecting call's id."""

    model_config = ConfigDict(frozen=True)

    outcome: ToolOutcome
    audit: AuditRecord | None = None


def tool_message(call: ToolCallRequest, outcome: ToolOutcome) -> dict[str, Any]:
    """The TOOL-role message the model reads: the outcome as JSON data."""
    body: dict[str, Any] = {"status": outcome.status, "code": outcome.code}
    if outcome.message:
        body["message"] = outcome.message
    if outcome.status == "ok":
        body["result"] = outcome.result
    if outcome.truncated:
        body["truncated"] = True
    if outcome.blocked_host:
        body["blocked_host"] = outcome.blocked_host
    content = json.dumps(body, ensure_ascii=False, default=str)
    return {"role": "tool", "tool_call_id": call.call_id, "name": call.name, "content": content}


def run_policy(tenant: TenantPolicy, state: RunState, agent: str) -> CallPolicy:
    """The chain's policy for a call made for a run: the tenant's settings plus the run's.

    The run adds its high-risk approval, the hosts a person allowed at the egress gate,
    and in multi/custom mode the tenant's scoping of the researcher's tools (enforced
    here, whatever the model asked for).
    """
    settings = state.settings
    scoped = agent == "researcher" and settings.mode != "single"
    agent_tools = settings.researcher_tools if scoped else None
    return CallPolicy(
        enabled_tools=tenant.enabled_tools,
        agent_tools=frozenset(agent_tools) if agent_tools is not None else None,
        approve_high_risk=settings.approve_high_risk,
        egress=EgressPolicy(
            enabled=tenant.egress_enabled,
            allowed_hosts=tenant.allowed_egress_hosts,
            approved_hosts=frozenset(state.approved_hosts),
        ),
    )


def make_gateway_handler(
    deps: GatewayDeps,
    policies: TenantPolicies,
    mcp: McpHub | None = None,
    *,
    audit_ledger: bool = False,
) -> Handler:
    """The gateway role's handler.

    Args:
        deps: the registry of built-in and plugin tools, network settings, the audit hook.
        policies: each tenant's enabled tools, egress settings and MCP servers.
        mcp: the MCP sessions; without it, tenants' MCP servers are ignored.
        audit_ledger: return each call's audit record with the step's commit, for the
            recorder to append (`gateway.audit.make_audit_applier`), instead of calling
            ``deps.on_outcome`` during the step.
    """

    async def handle(ctx: StepContext, command: Command) -> StepResult:
        batch = command.payload
        if not isinstance(batch, ToolCallBatch):
            raise TypeError(f"gateway got a {batch.kind} payload")
        state = batch.state
        tenant = await policies.for_tenant(command.tenant_id)
        registry = deps.registry
        if mcp is not None and tenant.mcp_servers:
            registry = await mcp.registry_for(deps.registry, tenant.mcp_servers)
        call_ctx = CallContext(
            tenant_id=command.tenant_id,
            subject=command.subject,
            run_id=command.run_id,
            agent=batch.agent,
            policy=run_policy(tenant, batch.state, batch.agent),
            deps=deps if registry is deps.registry else replace(deps, registry=registry),
            groups=frozenset(command.groups),
            deadline=command.deadline,
        )
        events: list[ClientEvent] = []
        records: list[LedgerRecord] = []
        messages = list(state.messages)
        for index, call in enumerate(batch.calls):
            # The call is shown before its result; the write overlaps the call itself.
            shown = asyncio.create_task(
                ctx.emit(
                    ToolCallStarted(
                        run_id=command.run_id,
                        step_id=command.step_id,
                        agent=batch.agent,
                        call_id=call.call_id,
                        tool=call.name,
                        args=redact(call.arguments),
                    )
                )
            )
            try:
                outcome, audit = await _run_once(ctx, call, call_ctx)
            finally:
                await shown
            if audit is not None and audit_ledger:
                key = f"{command.step_id}:{index}"
                records.append(audit_record(key, audit))
            elif audit is not None and deps.on_outcome is not None:
                await deps.on_outcome(audit)
            events.append(_result_event(command, batch.agent, call, outcome))
            messages.append(tool_message(call, outcome))
        if batch.then == "end":
            done = Done(run_id=command.run_id, step_id=command.step_id, status="done")
            return StepResult(events=[*events, done], finished="done", records=records)
        if batch.thread == "judge":  # a judge's verify-only pass keeps its own thread
            judge = {
                **state.judge,
                "messages": [*state.judge.get("messages", []), *messages[len(state.messages) :]],
            }
            new_state = state.model_copy(update={"judge": judge})
        else:
            new_state = state.model_copy(
                update={"messages": messages, "tool_hops": state.tool_hops + 1}
            )
        back = command.follow(keys.Role(batch.agent), AgentTask(state=new_state))
        return StepResult(next=[back], events=events, records=records)

    return handle


def _side_effects(call: ToolCallRequest, call_ctx: CallContext) -> bool:
    registry = call_ctx.deps.registry
    return call.name in registry and registry.get(call.name).spec.side_effects


async def _run_once(
    ctx: StepContext, call: ToolCallRequest, call_ctx: CallContext
) -> tuple[ToolOutcome, AuditRecord | None]:
    """Run a call through the chain; its outcome and audit record (the caller writes it)."""
    if not _side_effects(call, call_ctx):
        return await invoke_recorded(call, call_ctx)
    key = keys.run_call(ctx.command.run_id, ctx.command.shard, call.call_id)
    stored = await ctx.redis.get(key)
    if stored is not None:
        recorded = RecordedCall.model_validate_json(stored)
        return recorded.outcome, recorded.audit
    outcome, audit = await invoke_recorded(call, call_ctx)
    record = RecordedCall(outcome=outcome, audit=audit)
    await ctx.redis.set(key, record.model_dump_json(), ex=ctx.settings.run_ttl_s)
    return outcome, audit


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
        truncated=outcome.truncated,
        blocked_host=outcome.blocked_host,
        duration_ms=outcome.duration_ms,
    )
