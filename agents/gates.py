"""Durable gates: a run pauses at a checkpoint in the store and waits for a person.

Suspending writes the checkpoint (run state, and for egress the blocked host, tool and
redacted arguments), marks the run ``suspended`` and emits ``approval_request``; the step
publishes nothing, so no process holds the run. :func:`resume` (the API, the websocket and
``agentbus runs resume``) loads the checkpoint under the caller's scope (only the user who
started the run may resume it), takes only a decision verb from the caller and publishes
the continuation.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Literal

from redis.asyncio import Redis

from agents import graph
from agents.deps import AgentDeps
from agents.metrics import record_decision, record_pause
from bus import keys, tracing
from bus.commands import (
    AgentTask,
    Command,
    RunState,
    ToolCallBatch,
    ToolCallRequest,
    TraceContext,
    deadline_in,
)
from bus.contracts import checkpoint_state
from bus.errors import BusError
from bus.events import ApprovalRequest
from bus.fairshare import FairShare
from bus.json_values import is_object
from bus.publish import publish
from bus.run_state import ChatMessage
from bus.runtime.context import StepContext, StepResult
from bus.settings import BusSettings
from bus.store import (
    CheckpointRecord,
    CheckpointStore,
    GateNotFound,
    GateReason,
    RunStatus,
    RunStore,
    Scope,
)
from bus.store.repository import utcnow
from gateway.redact import redact

ANSWER_DECISIONS = frozenset({"approve", "reject"})
EGRESS_DECISIONS = frozenset({"egress_allow_once", "egress_allow_always", "egress_deny"})


class BadDecision(BusError):
    """The decision does not fit the gate (e.g. ``approve`` at an egress gate)."""

    code = "bad_decision"


async def suspend(
    ctx: StepContext,
    deps: AgentDeps,
    state: RunState,
    reason: Literal["approve_answer", "egress_approval"],
    *,
    answer: str | None = None,
    critique: str | None = None,
    blocked: BlockedCall | None = None,
) -> StepResult:
    """Pause the run at a gate: checkpoint, ``suspended`` status, ``approval_request``."""
    command = ctx.command
    if deps.checkpoints is None:
        raise RuntimeError("a gate needs a state store")
    args = redact(blocked.args) if blocked is not None else None
    record_pause(reason, state)
    if tracing.ENABLED:  # the resumed run's trace links back to this one
        here = tracing.current()
        state = state.evolve(paused_trace=here.traceparent if here else None)
    now = utcnow()
    record = CheckpointRecord(
        id=uuid.uuid5(uuid.NAMESPACE_URL, command.step_id).hex,  # a redelivery writes the same
        run_id=command.run_id,
        tenant_id=command.tenant_id,
        subject=command.subject,
        reason=GateReason(reason),
        step=command.step,
        state=state.model_dump(mode="json"),
        blocked_host=blocked.host if blocked else None,
        tool=blocked.tool if blocked else None,
        args=args,
        created_at=now,
        expires_at=now + timedelta(seconds=deps.gate_ttl_s),
    )
    owner = Scope.user(command.tenant_id, command.subject)
    with tracing.store_span("checkpoints.create"):
        if await deps.checkpoints.open_for(owner, command.run_id) is None:
            await deps.checkpoints.create(record)
        await deps.runs.set_status(owner, command.run_id, RunStatus.SUSPENDED)
    # A paused run waits for a person, not for the workers: its room goes to the next run.
    await FairShare(ctx.redis, ctx.settings).finished(command.shard, command.run_id)
    request = ApprovalRequest(
        run_id=command.run_id,
        step_id=command.step_id,
        agent="gate",
        reason=reason,
        answer=answer,
        critique=critique,
        blocked_host=record.blocked_host,
        tool=record.tool,
        args=args,
    )
    return StepResult(events=[request])


@dataclass(frozen=True, slots=True)
class BlockedCall:
    """A tool call the egress check stopped: which call, of which tool, to which host."""

    call_id: str
    tool: str
    host: str | None
    args: dict[str, Any]


def blocked_call(state: RunState) -> BlockedCall | None:
    """The first tool call of the last batch that came back ``egress_blocked``, if any."""
    results: list[ChatMessage] = []
    for message in reversed(state.messages):
        if message.role != "tool":
            break
        results.insert(0, message)
    for message in results:
        try:
            body = json.loads(message.content)
        except ValueError:
            continue
        if is_object(body) and body.get("status") == "egress_blocked":
            call_id = message.tool_call_id or ""
            call = next((c for m in state.messages for c in m.tool_calls if c.id == call_id), None)
            return BlockedCall(
                call_id=call_id,
                tool=message.name or "",
                host=str(body.get("blocked_host") or "") or None,
                args=dict(call.arguments) if call else {},
            )
    return None


def continuation(
    checkpoint: CheckpointRecord,
    decision: str,
    shards: int,
    deadline_s: float,
    *,
    groups: Sequence[str] = (),
    trace: TraceContext | None = None,
) -> Command:
    """The command that continues a paused run after ``decision`` (already validated).

    Its deadline is the run's own timeout from now (``deadline_s`` if the run has none).
    """
    state = checkpoint_state(checkpoint.state, checkpoint.state_version)
    if checkpoint.reason == "approve_answer":
        if decision not in ANSWER_DECISIONS:
            raise BadDecision(f"{decision!r} does not answer an answer-approval gate")
        if decision == "reject":
            state = state.evolve(stop_reason="rejected")
        role = graph.next_role(state.settings, "answer_gate", decision)
        payload: AgentTask | ToolCallBatch = AgentTask(state=state)
    else:
        if decision not in EGRESS_DECISIONS:
            raise BadDecision(f"{decision!r} does not answer an egress gate")
        found = blocked_call(state)
        call_id = found.call_id if found else ""
        others = [m for m in state.messages if m.tool_call_id != call_id]
        if decision == "egress_deny":
            refusal = {
                "status": "refused",
                "code": "egress_denied",
                "message": f"A person denied access to {checkpoint.blocked_host}.",
            }
            denied = ChatMessage(
                role="tool",
                tool_call_id=call_id,
                name=checkpoint.tool or "",
                content=json.dumps(refusal),
            )
            state = state.evolve(messages=[*others, denied])
            role = graph.next_role(state.settings, "egress_gate", "deny")
            payload = AgentTask(state=state)
        else:
            # Only the blocked call runs again, with the real arguments from the state
            # (never the client's, never the redacted copy); earlier results stay.
            approved = sorted({*state.approved_hosts, checkpoint.blocked_host or ""} - {""})
            state = state.evolve(messages=others, approved_hosts=approved)
            role = graph.next_role(state.settings, "egress_gate", "allow")
            call = ToolCallRequest(
                call_id=call_id, name=checkpoint.tool or "", arguments=found.args if found else {}
            )
            payload = ToolCallBatch(calls=[call], state=state)
    return Command(
        run_id=checkpoint.run_id,
        tenant_id=checkpoint.tenant_id,
        subject=checkpoint.subject,
        shard=keys.shard_of(checkpoint.run_id, shards),
        role=role,
        step=checkpoint.step + 1,
        # The run's own timeout (its tenant's), the deployment's only for older runs.
        deadline=deadline_in(state.settings.timeout_s or deadline_s),
        groups=tuple(groups),
        trace=trace or TraceContext(),
        payload=payload,
    )


AllowAlways = Callable[[str, str, str, str], Awaitable[None]]
"""(tenant, subject, run id, host): persist the host to the tenant's allowlist, audited."""


async def resume(
    checkpoints: CheckpointStore,
    runs: RunStore,
    redis: Redis,
    settings: BusSettings,
    *,
    scope: Scope,
    run_id: str,
    decision: str,
    allow_always: AllowAlways | None = None,
    groups: Sequence[str] = (),
) -> Command:
    """Continue a paused run with ``decision``; returns the published continuation.

    The gate's reason, host and arguments come from the checkpoint, never the caller. The
    run goes on with the resuming caller's ACL groups (the same subject, who may hold
    another key by now).

    Raises:
        GateNotFound: the scope sees no gate for the run (another user's or tenant's run).
        GateForbidden: the scope sees the run (a tenant admin) but another user owns it.
        GateConflict: the gate was already resumed.
        GateExpired: the gate expired.
        BadDecision: the verb does not fit the gate.
    """
    gate = await checkpoints.open_for(scope, run_id)
    if gate is not None:  # check the verb before the gate is used up
        allowed = ANSWER_DECISIONS if gate.reason == "approve_answer" else EGRESS_DECISIONS
        if decision not in allowed:
            raise BadDecision(
                f"{decision!r} does not answer a {gate.reason} gate",
                hint=f"one of: {', '.join(sorted(allowed))}",
            )
    claimed = await checkpoints.claim(scope, run_id, decision)
    paused = claimed.state.get("paused_trace")
    attributes = {
        "agentbus.run_id": run_id,
        "agentbus.tenant_id": claimed.tenant_id,
        "agentbus.gate.reason": str(claimed.reason),
        "agentbus.gate.decision": decision,
    }
    earlier = (TraceContext(traceparent=paused),) if isinstance(paused, str) else ()
    with tracing.span("gate resume", attributes, links=earlier, kind="server"):
        command = continuation(
            claimed,
            decision,
            settings.shards,
            settings.run_deadline_s,
            groups=groups,
            trace=tracing.current() or TraceContext(),
        )
    record_decision(str(claimed.reason), decision)
    if decision == "egress_allow_always" and allow_always is not None and claimed.blocked_host:
        await allow_always(claimed.tenant_id, claimed.subject, run_id, claimed.blocked_host)
    await runs.set_status(Scope.user(claimed.tenant_id, claimed.subject), run_id, RunStatus.RUNNING)
    await publish(redis, command, settings)
    return command


async def more_info(checkpoints: CheckpointStore, scope: Scope, run_id: str) -> dict[str, Any]:
    """The open gate's details with redacted arguments (the ``more_info`` view).

    Raises:
        GateNotFound: the scope sees no open gate for the run.
    """
    gate = await checkpoints.open_for(scope, run_id)
    if gate is None:
        raise GateNotFound(f"no open gate for run {run_id}")
    return {
        "run_id": run_id,
        "subject": gate.subject,
        "reason": gate.reason,
        "blocked_host": gate.blocked_host,
        "tool": gate.tool,
        "args": gate.args,
        "expires_at": gate.expires_at.isoformat(),
    }
