"""The gateway's policy chain: every tool call from every agent goes through `invoke`."""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

import structlog

from gateway.call_context import CallContext
from gateway.checks.egress import egress_for
from gateway.checks.input_schema import check_input, parse_args
from gateway.checks.lookup import lookup
from gateway.checks.output_schema import check_output
from gateway.checks.output_size import cap_output
from gateway.checks.permission import check_permission
from gateway.checks.risk import check_risk
from gateway.checks.timeout import run_with_timeout
from gateway.errors import GatewayError
from gateway.outcome import AuditRecord, OutcomeStatus, Settled, ToolOutcome
from gateway.ports import CallGuard, ToolInvocation
from gateway.redact import redact
from gateway.registry import RegisteredTool

log = structlog.get_logger(__name__)


def _checked(call: ToolInvocation, ctx: CallContext) -> tuple[RegisteredTool, dict[str, Any]]:
    """Checks 1-4, before anything runs: the tool and its validated arguments."""
    entry = lookup(ctx.deps.registry, call.name, ctx.policy)
    spec = entry.spec
    check_permission(spec, ctx.policy, ctx.agent)
    check_risk(spec, ctx.policy)
    args = parse_args(call.arguments)
    check_input(entry.input_validator, args)
    return entry, args


async def _run_tool(
    call: ToolInvocation,
    ctx: CallContext,
    entry: RegisteredTool,
    args: dict[str, Any],
    key: str | None,
) -> ToolOutcome:
    """Checks 5-8, around the tool's one run: egress, timeout, output schema and size."""
    spec = entry.spec
    caller = replace(ctx.caller, request_id=f"{ctx.step_id}:{call.call_id}", idempotency_key=key)
    async with egress_for(spec, ctx, caller) as net:
        result = await run_with_timeout(entry.tool, args, net, spec.timeout_s, caller)
    ctx.deps.fault("after_tool", spec.name)
    check_output(entry.output_validator, result, spec.name)
    capped, truncated = cap_output(result, spec.max_output_bytes)
    return ToolOutcome.success(capped, truncated=truncated)


def _audit_args(raw: Any) -> Any:
    # Text that is not a JSON object cannot be redacted key by key, so it is not stored.
    try:
        return redact(parse_args(raw))
    except GatewayError:
        return (
            redact(raw)
            if not isinstance(raw, str | bytes)
            else f"[not a JSON object: {len(raw)} characters]"
        )


async def invoke(
    call: ToolInvocation, ctx: CallContext, guard: CallGuard | None = None
) -> tuple[ToolOutcome, AuditRecord]:
    """Run one tool call through the chain; its outcome and the call's audit record.

    In order: lookup → permission → risk approval → input schema → (a side-effecting
    tool: the ``guard``'s at-most-once claim) → egress (decided per outbound request by
    the tool's egress client) → timeout → output schema → output size. The audit record
    carries redacted arguments and result; the caller writes it (the gateway worker
    commits it with its step, for the recorder to append).

    A bad call never raises: refusals and failures, including exceptions from the tool
    itself, become an outcome whose message the model can act on (never a traceback; the
    traceback goes to the log). Only the guard's own failures (the broker unreachable)
    propagate, so the step is retried rather than the call reported failed.

    Args:
        call: the call as the model made it.
        ctx: who is calling, their policy, and the gateway's dependencies.
        guard: claims a side-effecting call before its tool runs (`gateway.once`); it
            may answer with a recorded outcome or ``outcome_unknown`` instead.

    Returns:
        The outcome, with `duration_ms` measured over the whole chain, and its audit record.
    """
    started = time.perf_counter()
    try:
        entry, args = _checked(call, ctx)
    except GatewayError as e:
        return _finished(call, ctx, ToolOutcome.from_error(e), started)
    key: str | None = None
    if guard is not None and entry.spec.side_effects:
        try:
            key = await guard.before_run(entry.spec)
        except Settled as settled:  # a recorded outcome: returned as it was recorded
            return settled.outcome, settled.audit
        except GatewayError as e:  # outcome_unknown
            return _finished(call, ctx, ToolOutcome.from_error(e), started)
    try:
        outcome = await _run_tool(call, ctx, entry, args, key)
    except GatewayError as e:
        outcome = ToolOutcome.from_error(e)
    except Exception as e:
        log.exception("tool_crashed", tool=call.name, call_id=call.call_id, run_id=ctx.run_id)
        outcome = ToolOutcome(
            status=OutcomeStatus.ERROR,
            code="tool_error",
            message=(
                f"the tool {call.name!r} failed unexpectedly ({type(e).__name__}); "
                "try different arguments or another tool"
            ),
        )
    return _finished(call, ctx, outcome, started)


def _finished(
    call: ToolInvocation, ctx: CallContext, outcome: ToolOutcome, started: float
) -> tuple[ToolOutcome, AuditRecord]:
    outcome = outcome.with_duration((time.perf_counter() - started) * 1000)
    return outcome, _audit(call, ctx, outcome)


def _audit(call: ToolInvocation, ctx: CallContext, outcome: ToolOutcome) -> AuditRecord:
    registry = ctx.deps.registry
    spec = registry.get(call.name).spec if call.name in registry else None
    return AuditRecord(
        tenant_id=ctx.tenant_id,
        subject=ctx.subject,
        run_id=ctx.run_id,
        agent=ctx.agent,
        call_id=call.call_id,
        tool=call.name,
        args=_audit_args(call.arguments),
        outcome=outcome.model_copy(update={"result": redact(outcome.result)}),
        duration_ms=outcome.duration_ms,
        tool_version=spec.version if spec else None,
        side_effects=spec.side_effects if spec else False,
    )
