"""A turn's deltas reach clients in batches: one event per kind change, size or age limit."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import cast

from agents.streaming import Kind, TokenBatcher
from bus import keys
from bus.commands import AgentTask, Command, deadline_in
from bus.events import Answer, ClientEvent, Reasoning
from bus.run_state import RunSettings, RunState
from bus.runtime.context import StepContext


@dataclass
class Written:
    """The one part of a step's context a batcher uses: writing events."""

    command: Command
    batches: list[list[ClientEvent]] = field(default_factory=list[list[ClientEvent]])

    async def emit_checking_cancel(self, *events: ClientEvent) -> bool:
        self.batches.append(list(events))
        return False


def _context() -> Written:
    state = RunState(question="q", settings=RunSettings())
    command = Command(
        run_id="run-1",
        tenant_id="t1",
        subject="alice",
        role=keys.Role.RESEARCHER,
        step=1,
        deadline=deadline_in(60),
        payload=AgentTask(state=state),
    )
    return Written(command)


async def feed(batcher: TokenBatcher, kind: Kind, text: str) -> None:
    """A delta as the turn adds it: buffered when that writes nothing, else added."""
    if not batcher.buffered(kind, text):
        await batcher.add(kind, text)


async def test_deltas_are_written_at_a_kind_change_and_at_the_size_limit() -> None:
    ctx = _context()
    batcher = TokenBatcher(cast(StepContext, ctx), "researcher", max_chars=10, max_age_s=60)
    deltas: list[tuple[Kind, str]] = [
        ("reasoning", "thin"),
        ("reasoning", "king"),
        ("answer", "The "),
        ("answer", "answer "),  # 11 characters: written
        ("answer", ""),
        ("answer", "is "),
        ("answer", "437."),
    ]
    for kind, text in deltas:
        await feed(batcher, kind, text)
    kept = batcher.drain()

    written = [[(type(e).__name__, getattr(e, "delta", "")) for e in b] for b in ctx.batches]
    assert written == [[("Reasoning", "thinking")], [("Answer", "The answer ")]]
    assert [(type(e), e.delta) for e in kept] == [(Answer, "is 437.")]
    assert not any(isinstance(e, Reasoning) for e in kept)


async def test_a_delta_older_than_the_age_limit_is_written_with_the_next() -> None:
    ctx = _context()
    batcher = TokenBatcher(cast(StepContext, ctx), "researcher", max_chars=512, max_age_s=0)
    await feed(batcher, "answer", "a")
    await feed(batcher, "answer", "b")

    assert [[getattr(e, "delta", "") for e in b] for b in ctx.batches] == [["a"], ["b"]]
