"""Coalesce token deltas into small event batches (one round trip per batch, not per token)."""

from __future__ import annotations

import time
from typing import Literal

from bus.events import Answer, Reasoning
from bus.runtime.context import StepContext

Kind = Literal["reasoning", "answer"]


class TokenBatcher:
    """Buffers deltas of one kind; flushes on a kind change, a size or an age limit.

    Each flush also checks whether the run was cancelled (same round trip). What is
    still buffered when the turn ends is taken with :meth:`drain` and written with the
    step's commit, which saves a round trip per step.
    """

    def __init__(
        self,
        ctx: StepContext,
        agent: str,
        *,
        attempt: int = 0,
        max_chars: int = 512,
        max_age_s: float = 0.03,
    ) -> None:
        self.ctx = ctx
        self.agent = agent
        self.attempt = attempt
        self.max_chars = max_chars
        self.max_age_s = max_age_s
        self.cancelled = False
        self._kind: Kind | None = None
        self._parts: list[str] = []
        self._size = 0
        self._since = time.monotonic()

    def buffered(self, kind: Kind, text: str) -> bool:
        """Buffer one delta when that writes nothing (True); False: `add` it instead.

        Most deltas only join the buffer: this saves them the coroutine `add` costs.
        """
        if not text:
            return True
        if kind != self._kind or not self._parts:
            return False
        size = self._size + len(text)
        if size >= self.max_chars or time.monotonic() - self._since >= self.max_age_s:
            return False
        self._parts.append(text)
        self._size = size
        return True

    async def add(self, kind: Kind, text: str) -> None:
        """Buffer one delta, flushing first if the kind changed or limits are reached."""
        if not text:
            return
        if self._kind is not None and kind != self._kind:
            await self.flush()
        if not self._parts:
            self._since = time.monotonic()
        self._kind = kind
        self._parts.append(text)
        self._size += len(text)
        if self._size >= self.max_chars or time.monotonic() - self._since >= self.max_age_s:
            await self.flush()

    async def flush(self) -> None:
        """Write what is buffered as one event."""
        events = self.drain()
        if events and await self.ctx.emit_checking_cancel(*events):
            self.cancelled = True

    def drain(self) -> list[Answer | Reasoning]:
        """Take what is buffered as (at most one) event, without writing it."""
        if not self._parts or self._kind is None:
            return []
        delta = "".join(self._parts)
        cmd = self.ctx.command
        self._parts, self._size = [], 0
        if self._kind == "answer":
            return [
                Answer(
                    run_id=cmd.run_id,
                    step_id=cmd.step_id,
                    agent=self.agent,
                    delta=delta,
                    attempt=self.attempt,
                )
            ]
        return [Reasoning(run_id=cmd.run_id, step_id=cmd.step_id, agent=self.agent, delta=delta)]
