"""The gateway's policy chain: every tool call from every agent goes through `invoke`."""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

import structlog

from gateway.checks.egress import egress_for
from gateway.checks.input_schema import check_input, parse_args
from gateway.checks.lookup import lookup
from gateway.checks.output_schema import check_output
from gateway.checks.output_size import cap_output
from gateway.checks.permission import check_permission
from gateway.checks.risk import check_risk
from gateway.checks.timeout import run_with_timeout
from gateway.context import CallContext
from gateway.errors import GatewayError
from gateway.outcome import AuditRecord, OutcomeStatus, ToolOutcome
from gateway.ports import ToolCall
from gateway.redact import redact

log = structlog.get_logger(__name__)


async def _run_chain(call: ToolCall, ctx: CallContext) -> ToolOutcome:
    entry = lookup(ctx.deps.registry, call.name, ctx.policy)
    spec = entry.spec
    check_permission(spec, ctx.policy, ctx.agent)
    check_risk(spec, ctx.policy)
    args = parse_args(call.arguments)
    check_input(entry.input_validator, args)
    caller = replace(ctx.caller, call_id=call.call_id)
    async with egress_for(spec, ctx) as net:
        result = await run_with_timeout(entry.tool, args, net, spec.timeout_s, caller)
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


async def invoke(call: ToolCall, ctx: CallContext) -> ToolOutcome:
    """Run one tool call through the chain and return its outcome.

    In order: lookup → permission → risk approval → input schema → egress (decided per
    outbound request by the tool's egress client) → timeout → output schema → output size
    → `on_outcome` (the audit hook, with redacted arguments and result).

    A bad call never raises: refusals and failures, including exceptions from the tool
    itself, become an outcome whose message the model can act on (never a traceback; the
    traceback goes to the log). Only an exception from `on_outcome` propagates, so that
    the worker leaves the message unacknowledged when the audit could not be written.

    Args:
        call: the call as the model made it.
        ctx: who is calling, their policy, and the gateway's dependencies.

    Returns:
        The outcome, with `duration_ms` measured over the whole chain.
    """
    started = time.perf_counter()
    try:
        outcome = await _run_chain(call, ctx)
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
    duration_ms = (time.perf_counter() - started) * 1000
    outcome = outcome.with_duration(duration_ms)
    if ctx.deps.on_outcome is not None:
        spec = ctx.deps.registry.get(call.name).spec if call.name in ctx.deps.registry else None
        await ctx.deps.on_outcome(
            AuditRecord(
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
        )
    return outcome


async def invoke_recorded(call: ToolCall, ctx: CallContext) -> tuple[ToolOutcome, AuditRecord]:
    """`invoke`, handing back the call's audit record instead of passing it to ``on_outcome``.

    For callers that write the record themselves, with their step's commit (the ledger).
    """
    captured: list[AuditRecord] = []

    async def capture(record: AuditRecord) -> None:
        captured.append(record)

    outcome = await invoke(call, replace(ctx, deps=replace(ctx.deps, on_outcome=capture)))
    return outcome, captured[0]
