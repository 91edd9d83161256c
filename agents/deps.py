"""What the agent roles need, wired once by the composition root."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from agents.llm.ports import LLM, ToolDefinition
from agents.sources import Source
from agents.understanding.claims.ports import ClaimCheck
from agents.understanding.claims.rules import RulesClaimCheck
from bus.fence import Fence
from bus.store import CheckpointStore, ConversationStore, RunStore, SummaryStore
from gateway.registry import ToolRegistry


def _now() -> datetime:
    return datetime.now(UTC)


FaultPoint = Callable[[str], None]
"""A test seam a handler calls at a named point of its step (`api.compose.faults.fault`, which
a test arms to SIGKILL the process right there); the composition root passes it in."""


def no_fault(point: str) -> None:
    """No point is armed: what a handler calls when nothing passed it the seam."""


def tool_definitions(registry: ToolRegistry) -> list[ToolDefinition]:
    """The gateway's tools as the model is offered them: name, description, input schema."""
    return [
        ToolDefinition(name=s.name, description=s.description, parameters=s.input_schema)
        for s in registry.list()
    ]


ToolCatalogue = Callable[[str], Awaitable[Sequence[ToolDefinition]]]
"""A tenant's tools as its models are offered them: what it enabled, its MCP servers' too."""


@dataclass(frozen=True, kw_only=True)
class AgentDeps:
    """Dependencies of the intake, researcher and finalizer handlers.

    Attributes:
        llm: the chat model.
        tools: the tool schemas offered to the model (from the gateway's registry), when
            there is no ``catalogue``.
        catalogue: each tenant's tools (enabled ones, MCP servers' included), cached by
            the composition root so a step costs no store read.
        runs: the run store.
        conversations: the conversation store.
        clock: the current time (the date goes into the system prompt).
        history_turns: how many recent messages of a conversation the model sees whole
            at most; older ones are folded into a summary (with ``summaries``; without, they
            are left out).
        summaries: where conversation summaries are stored (None: no folding).
        context_window: the model's context window in tokens; a conversation's history
            is folded to fit its share of it (`agents.context_budget`).
        sources: the retrieval sources a multi-mode gather may query, by name.
        gather_budget_s: how long one gather branch may take before it counts as empty.
        checkpoints: where paused runs wait (gates are armed only with a store).
        gate_ttl_s: how long a paused run can be resumed.
        fault: the test seam the intake calls once it stored a summary (`FaultPoint`).
        fence: the erasure fence the intake checks before it writes a run (None: none).
        claims: the last judge's claim check (`agents.understanding.claims`): the rules unless the
            composition root wires the model's.
    """

    llm: LLM
    tools: Sequence[ToolDefinition]
    catalogue: ToolCatalogue | None = None
    runs: RunStore
    conversations: ConversationStore
    clock: Callable[[], datetime] = field(default=_now)
    history_turns: int = 20
    summaries: SummaryStore | None = None
    context_window: int = 8192
    sources: Mapping[str, Source] = field(default_factory=lambda: {})
    gather_budget_s: float = 5.0
    checkpoints: CheckpointStore | None = None
    gate_ttl_s: float = 24 * 3600
    fault: FaultPoint = no_fault
    fence: Fence | None = None
    claims: ClaimCheck = field(default_factory=RulesClaimCheck)


async def tenant_tools(deps: AgentDeps, tenant_id: str) -> Sequence[ToolDefinition]:
    """The tools the tenant's runs may be offered, before the run's own scope."""
    if deps.catalogue is None:
        return deps.tools
    return await deps.catalogue(tenant_id)
