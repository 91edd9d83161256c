"""The gateway role: runs a batch of tool calls through the policy chain.

A call of a tool the client declared for its run goes through the same chain
(`gateway.client_tools`): it ends ``client_pending`` until the client sends its result.

The outcomes go back as a `ToolResults` payload (data, never instructions) to the node the
agent graph names for the batch's purpose (the `Route` wired in by the composition root);
the calling agent appends them to its own thread. A batch sent with ``then="end"``
(``agentbus tools call``) ends the run after its ``tool_result`` events instead. The
tenant's policy (enabled tools, egress, MCP servers) is looked up once per batch through
the `TenantPolicies` port.

Every call's audit record leaves with the step, as a ledger record in the step's commit,
which a recorder appends to the hash-chained log in batches, so the log write is off the
tool step's critical path and lands exactly when the step commits.

A side-effecting tool runs **at most once per call id**, whatever is killed when
(`gateway.once`): once the call's checks pass, the call id is claimed in Redis (a claim
plus a lease the step's heartbeat keeps alive, replicated first when replica waits are
asked), then the tool runs, then its outcome and audit record are recorded under the call
id, before the step commits. A redelivered call returns a recorded outcome; waits while
the claim's lease is alive (its first delivery is still running); and when the lease
ended with nothing recorded (that gateway died), it does not run the tool again but ends
the call ``outcome_unknown`` ("the tool may or may not have run"), for the model, the
``tool_result`` event and the audit row alike. A tool that takes an idempotency key
(`ToolSpec.takes_idempotency_key`) is run again instead, with the same key, which makes
it **exactly once** as its downstream sees it. A call without side effects pays no round
trip for any of this.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from dataclasses import replace
from typing import Any

from bus import tracing
from bus.commands import Command, ToolCallBatch, ToolCallRequest, ToolCallResult, ToolResults
from bus.events import ClientEvent, Done, ToolCallStarted, ToolResult
from bus.ledger import LedgerRecord
from bus.runtime.context import StepContext, StepResult
from bus.runtime.worker import Handler
from gateway.audit import audit_record
from gateway.call_context import CallContext, GatewayDeps, call_context
from gateway.chain import invoke
from gateway.checks.output_size import cap_output, json_size
from gateway.client_tools import registry_for_call
from gateway.mcp.hub import McpHub
from gateway.metrics import count_call
from gateway.once import CallOnce
from gateway.outcome import AuditRecord, ToolOutcome
from gateway.ports import Route, TenantPolicies
from gateway.redact import redact
from retrieval.citations import CITED_TOOLS, renumbered

#: This role's node in the agent graph.
NODE = "gateway"

#: Bytes of one result the calling model reads; a bulkier result goes to a run blob and the
#: model gets a view cut to this size (marked), so no tool output can outgrow a command.
VIEW_BYTES = 8_192


def call_result(call: ToolCallRequest, outcome: ToolOutcome) -> ToolCallResult:
    """What the calling agent gets back for one call."""
    return ToolCallResult(
        call_id=call.call_id,
        name=call.name,
        status=outcome.status.value,
        code=outcome.code,
        message=outcome.message,
        result=outcome.result,
        truncated=outcome.truncated,
        blocked_host=outcome.blocked_host,
    )


def make_gateway_handler(
    deps: GatewayDeps,
    policies: TenantPolicies,
    mcp: McpHub | None = None,
    *,
    route: Route,
) -> Handler:
    """The gateway role's handler.

    Args:
        deps: the registry of built-in and plugin tools, network settings.
        policies: each tenant's enabled tools, egress settings and MCP servers.
        mcp: the MCP sessions; without it, tenants' MCP servers are ignored.
        route: where results go back (the agent graph's edges from the gateway).
    """

    async def handle(ctx: StepContext, command: Command) -> StepResult:
        batch = command.payload
        if not isinstance(batch, ToolCallBatch):
            raise TypeError(f"gateway got a {batch.kind} payload")

        def shown(call: ToolCallRequest, *before: ClientEvent) -> Showing:
            # The call is shown before its result; the write overlaps the call itself.
            started = ToolCallStarted(
                run_id=command.run_id,
                step_id=command.step_id,
                agent=batch.agent,
                call_id=call.call_id,
                tool=call.name,
                args=redact(call.arguments),
            )
            return Showing(ctx, [*before, started])

        # The first call's event leaves in the same socket write as the read of the tenant's
        # settings version, when the step reads it (both on the pipelined connection).
        first = shown(batch.calls[0]) if batch.calls else None
        try:
            call_ctx = await _tenant_context(command, batch, policies, deps, mcp)
        except BaseException:
            if first is not None:  # not called: not shown, if it is not written yet
                await first.drop()
            raise
        events: list[ClientEvent] = []  # the results', written with the commit
        unshown: list[ClientEvent] = []  # calls shown by no write yet: ahead of the results
        records: list[LedgerRecord] = []
        results: list[ToolCallResult] = []
        ref = batch.state.next_ref  # each search result's chunks get numbers new to the run
        for index, call in enumerate(batch.calls):
            if index == 0 and first is not None:
                showing = first
            else:  # the calls not shown yet go first, so they are shown in order
                showing, unshown = shown(call, *unshown), []
            try:
                outcome, audit = await _traced_call(ctx, call, _for_call(call, call_ctx, batch))
            except BaseException:
                await showing.drop()
                raise
            # A call whose result is in before its event's write began (a tool that never
            # waits) is shown by the commit instead, ahead of every result: one write less.
            unshown += await showing.settled()
            records.append(audit_record(f"{command.step_id}:{index}", audit))
            if call.name in CITED_TOOLS and outcome.result is not None:
                numbered, ref = renumbered(outcome.result, ref)
                outcome = outcome.model_copy(update={"result": numbered})
            events.append(_result_event(command, batch.agent, call, outcome))
            results.append(await _bounded(ctx, call_result(call, outcome)))
        # Every outcome is recorded by now; a crash from here on redelivers a batch whose
        # side-effecting calls answer from their records.
        deps.fault("before_commit", *(call.name for call in batch.calls))
        if batch.then == "end":
            done = Done(run_id=command.run_id, step_id=command.step_id, status="done")
            return StepResult(events=[*unshown, *events, done], finished="done", records=records)
        target = route(batch.state.settings, NODE, batch.purpose)
        answer = ToolResults(
            purpose=batch.purpose,
            results=results,
            state=batch.state,
            next_ref=ref if ref > batch.state.next_ref else 0,
        )
        return StepResult(
            next=[command.follow(target, answer)], events=[*unshown, *events], records=records
        )

    return handle


class Showing:
    """A call's ``tool_call`` event (with any shown by no write yet before it), written
    as soon as the loop gets to it: while the call runs.

    A call that never waits (a calculator's) has its result before that: `settled` then
    takes the events back unwritten, for the step's commit to carry.
    """

    def __init__(self, ctx: StepContext, events: list[ClientEvent]) -> None:
        self._ctx = ctx
        self._events = events
        self._began = False
        self._task = asyncio.ensure_future(self._write())

    async def _write(self) -> None:
        self._began = True
        await self._ctx.emit(*self._events)

    async def settled(self) -> list[ClientEvent]:
        """The events if their write had not begun (no longer written: the caller's to
        write); otherwise none, once they are written."""
        if not self._began:
            self._task.cancel()
            return self._events
        await self._task
        return []

    async def drop(self) -> None:
        """The call did not run to its result: not shown, unless the write began (then it
        is waited for)."""
        if not self._began:
            self._task.cancel()
        await asyncio.gather(self._task, return_exceptions=True)


async def _tenant_context(
    command: Command,
    batch: ToolCallBatch,
    policies: TenantPolicies,
    deps: GatewayDeps,
    mcp: McpHub | None,
) -> CallContext:
    """The batch's calls' context under the tenant's policy as it is now (its version is
    read on every step: a settings change applies once its PUT returns)."""
    tenant = await policies.for_tenant(command.tenant_id)
    tools = deps
    if mcp is not None and tenant.mcp_servers:
        registry = await mcp.registry_for(deps.registry, tenant.mcp_servers)
        tools = replace(deps, registry=registry)
    # Every call in a batch is a model's choice (the researcher's or the fact-check's),
    # so the tenant's tool scope applies to all of them.
    return call_context(command, batch.state, tenant, tools, agent=batch.agent, scoped=True)


def _for_call(call: ToolCallRequest, call_ctx: CallContext, batch: ToolCallBatch) -> CallContext:
    """The context of one call: a call of a client-declared tool is looked up with it added
    (`gateway.client_tools`); a run that declares none pays nothing for them."""
    settings = batch.state.settings
    if settings.client_tools is None or settings.client_tool(call.name) is None:
        return call_ctx
    registry = registry_for_call(call_ctx.deps.registry, settings, call.name, call.client_result)
    if registry is call_ctx.deps.registry:  # the gateway's own tool of that name, or none
        return call_ctx
    return replace(
        call_ctx,
        deps=replace(call_ctx.deps, registry=registry),
        policy=call_ctx.policy.allowing(call.name),  # the client's tool is the run's to call
    )


async def _bounded(ctx: StepContext, result: ToolCallResult) -> ToolCallResult:
    """The result as the calling agent carries it: whole, or a marked view of a bulky one
    whose whole text is kept in a run blob (the same key on a redelivery)."""
    if result.status != "ok" or result.result is None:
        return result
    size = json_size(result.result)
    if size <= VIEW_BYTES:
        return result
    whole = json.dumps(result.result, ensure_ascii=False)
    blob = await ctx.put_blob(f"tool-result:{result.call_id}", whole)
    view, _ = cap_output({"result": result.result}, VIEW_BYTES)
    note = f"the result is {size} bytes; this view is cut to {VIEW_BYTES} (cut text ends in …)"
    message = f"{result.message}; {note}" if result.message else note
    return result.model_copy(
        update={"result": view.get("result"), "truncated": True, "blob": blob, "message": message}
    )


async def _traced_call(
    ctx: StepContext, call: ToolCallRequest, call_ctx: CallContext
) -> tuple[ToolOutcome, AuditRecord]:
    """One call, counted at the step's commit, inside an ``execute_tool`` span when tracing."""
    if not tracing.ENABLED:
        outcome, audit = await _run_once(ctx, call, call_ctx)
        count_call(call.name, outcome)
        return outcome, audit
    registry = call_ctx.deps.registry
    risk = str(registry.get(call.name).spec.risk) if call.name in registry else "unknown"
    attributes = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": call.name,
        "gen_ai.tool.call.id": call.call_id,
        "agentbus.tool.risk": risk,
    }
    with tracing.span(f"execute_tool {call.name}", attributes):
        outcome, audit = await _run_once(ctx, call, call_ctx)
        count_call(call.name, outcome)
        done: dict[str, str | float | bool] = {
            "agentbus.tool.status": outcome.status.value,
            "agentbus.tool.code": outcome.code,
            "agentbus.tool.duration_ms": outcome.duration_ms,
        }
        if outcome.blocked_host:
            done["server.address"] = outcome.blocked_host
        tracing.set_attributes(done)
        if outcome.status.value != "ok":
            tracing.set_error(outcome.code)
    return outcome, audit


def _side_effects(call: ToolCallRequest, call_ctx: CallContext) -> bool:
    registry = call_ctx.deps.registry
    return call.name in registry and registry.get(call.name).spec.side_effects


async def _run_once(
    ctx: StepContext, call: ToolCallRequest, call_ctx: CallContext
) -> tuple[ToolOutcome, AuditRecord]:
    """Run a call through the chain; its outcome and audit record (the caller writes it).

    A side-effecting call is claimed before its tool runs and its outcome recorded after
    (`gateway.once`); any other call pays no round trip for it.
    """
    if not _side_effects(call, call_ctx):
        return await invoke(call, call_ctx)
    once = CallOnce(ctx, call.call_id, call_ctx.deps.fault)
    try:
        outcome, audit = await invoke(call, call_ctx, once)
        if once.holding:
            call_ctx.deps.fault("before_record", call.name)
            await once.record(outcome, audit)
    except BaseException:
        if once.holding:  # failed or cut after the claim: the tool may have run
            with contextlib.suppress(Exception):
                await asyncio.shield(once.let_go())
        raise
    return outcome, audit


def _result_event(
    command: Command, agent: str, call: ToolCallRequest, outcome: ToolOutcome
) -> ToolResult:
    result, message, cut = _event_view(outcome)
    return ToolResult(
        run_id=command.run_id,
        step_id=command.step_id,
        agent=agent,
        call_id=call.call_id,
        tool=call.name,
        status=outcome.status,
        code=outcome.code,
        message=message,
        result=result,
        truncated=outcome.truncated or cut,
        blocked_host=outcome.blocked_host,
        duration_ms=outcome.duration_ms,
    )


def _event_view(outcome: ToolOutcome) -> tuple[Any, str, bool]:
    """What a client event carries of a result: the whole (redacted) result, or a view cut to
    ``VIEW_BYTES`` (every watcher of the run receives and the run's trace stores each event,
    so a 250 KB fetch is not sent whole; the agent's copy is kept in a run blob)."""
    if outcome.status != "ok":
        return None, outcome.message, False
    result = redact(outcome.result)
    size = json_size({"result": result})
    if size <= VIEW_BYTES:
        return result, outcome.message, False
    view, _ = cap_output({"result": result}, VIEW_BYTES)
    note = f"the result is {size} bytes; this event shows {VIEW_BYTES} (cut text ends in …)"
    return view.get("result"), f"{outcome.message}; {note}" if outcome.message else note, True
