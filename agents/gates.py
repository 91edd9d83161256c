"""Durable gates: a run pauses at a checkpoint in the store and waits for a person.

Suspending writes the checkpoint (run state, and for egress the blocked host, tool and
redacted arguments), marks the run ``suspended`` and emits ``approval_request``; the step
publishes nothing, so no process holds the run. :func:`resume` (the API, the websocket and
``agentbus runs resume``) loads the checkpoint under the caller's scope (only the user who
started the run may resume it), takes only a decision verb from the caller and publishes
the continuation. The ``client_tool`` gate waits for a client, not a person: the run's model
called tools the client declared, and :func:`resume_client_tools` continues it with the
client's results, which go through the gateway's chain like any tool's.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Literal

from redis.asyncio import Redis

from agents import graph
from agents.deps import AgentDeps
from agents.metrics import record_decision, record_pause
from agents.state import client_pending
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
from bus.errors import BusError
from bus.events import ApprovalRequest, ClientToolCall
from bus.fairshare import FairShare
from bus.json_values import is_object
from bus.publish import publish
from bus.readers import checkpoint_state
from bus.run_state import ChatMessage, ToolCall
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
#: What a resume with the client's tool results records as its decision.
CLIENT_RESULT = "client_result"
_CLIENT_TOOL_VERB = "the run waits for its client's tool results, not a decision"
#: Where those results go: the endpoint whose client declared the tools (REST and the
#: websocket carry decisions only; the call ids and arguments are the client's to act on).
_CLIENT_TOOL_HINT = (
    "send the results on the endpoint that declared the tools: the next chat completion "
    "ending with a tool message for each call (OpenAI), or the next run input ending with "
    "them (AG-UI); or cancel the run"
)
EGRESS_DECISIONS = frozenset({"egress_allow_once", "egress_allow_always", "egress_deny"})


class BadDecision(BusError):
    """The decision does not fit the gate (e.g. ``approve`` at an egress gate)."""

    code = "bad_decision"


async def suspend(
    ctx: StepContext,
    deps: AgentDeps,
    state: RunState,
    reason: Literal["approve_answer", "egress_approval", "client_tool"],
    *,
    answer: str | None = None,
    critique: str | None = None,
    blocked: BlockedCall | None = None,
    client_calls: Sequence[ToolCall] = (),
) -> StepResult:
    """Pause the run at a gate: checkpoint, ``suspended`` status, ``approval_request``
    (with ``client_tool``, the request lists the calls the client is to run)."""
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
        tool=blocked.tool if blocked else ",".join(c.name for c in client_calls)[:255] or None,
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
        # The client runs these with the arguments the model gave: they go to the run's
        # owner as they are (a person's gate shows redacted arguments instead).
        calls=[
            ClientToolCall(id=c.id, name=c.name, arguments=dict(c.arguments)) for c in client_calls
        ]
        or None,
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
    if checkpoint.reason == "client_tool":
        raise BadDecision(_CLIENT_TOOL_VERB, hint=_CLIENT_TOOL_HINT)
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
    if gate is not None and gate.reason == "client_tool":
        raise BadDecision(_CLIENT_TOOL_VERB, hint=_CLIENT_TOOL_HINT)
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


async def resume_client_tools(
    checkpoints: CheckpointStore,
    runs: RunStore,
    redis: Redis,
    settings: BusSettings,
    *,
    scope: Scope,
    run_id: str,
    results: Mapping[str, str],
    groups: Sequence[str] = (),
) -> Command:
    """Continue a run paused for its client's tools with the client's ``results`` (by call
    id); returns the published continuation.

    Every call the gate lists needs a result (any other id is refused too, before the gate
    is used up). The calls go back to the gateway with their results, through its chain
    (output schema and size, audit), and on to the researcher as any tool's results.

    Raises:
        GateNotFound, GateForbidden, GateConflict, GateExpired: as `resume`.
        BadDecision: the run waits at another gate, or a result is missing or unknown.
    """
    gate = await checkpoints.open_for(scope, run_id)
    if gate is not None:  # check the results before the gate is used up
        _client_batch(gate, results)
    claimed = await checkpoints.claim(scope, run_id, CLIENT_RESULT)
    calls, state = _client_batch(claimed, results)
    paused = claimed.state.get("paused_trace")
    earlier = (TraceContext(traceparent=paused),) if isinstance(paused, str) else ()
    attributes = {
        "agentbus.run_id": run_id,
        "agentbus.tenant_id": claimed.tenant_id,
        "agentbus.gate.reason": str(claimed.reason),
        "agentbus.gate.decision": CLIENT_RESULT,
    }
    with tracing.span("gate resume", attributes, links=earlier, kind="server"):
        trace = tracing.current() or TraceContext()
    command = Command(
        run_id=claimed.run_id,
        tenant_id=claimed.tenant_id,
        subject=claimed.subject,
        shard=keys.shard_of(claimed.run_id, settings.shards),
        role=graph.next_role(state.settings, "client_tool_gate", "result"),
        step=claimed.step + 1,
        deadline=deadline_in(state.settings.timeout_s or settings.run_deadline_s),
        groups=tuple(groups),
        trace=trace,
        payload=ToolCallBatch(calls=calls, state=state),
    )
    record_decision(str(claimed.reason), CLIENT_RESULT)
    await runs.set_status(Scope.user(claimed.tenant_id, claimed.subject), run_id, RunStatus.RUNNING)
    await publish(redis, command, settings)
    return command


def _client_batch(
    gate: CheckpointRecord, results: Mapping[str, str]
) -> tuple[list[ToolCallRequest], RunState]:
    """The client's calls with their results, and the state without the calls' pending
    placeholders (the gateway's results take their place)."""
    if gate.reason != "client_tool":
        raise BadDecision(
            f"the run waits at a {gate.reason} gate, not for its client's tools",
            hint="resume it with a decision",
        )
    state = checkpoint_state(gate.state, gate.state_version)
    pending = client_pending(state)
    ids = {c.id for c in pending}
    missing = [c.id for c in pending if c.id not in results]
    unknown = sorted(set(results) - ids)
    if missing or unknown:
        what = "; ".join(
            part
            for part in (
                f"no result for {', '.join(missing)}" if missing else "",
                f"no call {', '.join(unknown)} waits" if unknown else "",
            )
            if part
        )
        raise BadDecision(
            f"the client's results do not answer the calls the run waits for: {what}",
            hint=f"send one result for each of: {', '.join(sorted(ids))}",
        )
    kept = [m for m in state.messages if not (m.role == "tool" and m.tool_call_id in ids)]
    calls = [
        ToolCallRequest(
            call_id=c.id, name=c.name, arguments=dict(c.arguments), client_result=results[c.id]
        )
        for c in pending
    ]
    return calls, state.evolve(messages=kept)


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
