"""What the agent roles need, wired once by the composition root."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from agents.llm.ports import LLM, ToolSpec
from bus.store import ConversationStore, RunStore


def _now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True, kw_only=True)
class AgentDeps:
    """Dependencies of the intake, researcher and finalizer handlers.

    Attributes:
        llm: the chat model.
        tools: the tool schemas offered to the model (from the gateway's registry).
        runs: the run store.
        conversations: the conversation store.
        clock: the current time (the date goes into the system prompt).
        history_turns: how many earlier messages of a conversation the model sees.
    """

    llm: LLM
    tools: Sequence[ToolSpec]
    runs: RunStore
    conversations: ConversationStore
    clock: Callable[[], datetime] = field(default=_now)
    history_turns: int = 20
