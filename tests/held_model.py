"""A model a test holds mid-answer until it releases it: an order of events, not a timing.

A test that needs a second request to arrive while a first run still answers (queueing,
refusing, interrupting, cancelling, fair share) holds the first answer at a chosen text
delta and releases it once the second request was admitted. However slow the host, the
first run is still answering when the second arrives, and it ends only after the release.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence

from redis.asyncio import Redis

from agents.llm.ports import LLM, ChatMessage, LLMEvent, LLMOptions, TextDelta, ToolDefinition
from bus import keys
from tests.support import wait_for


class HeldModel:
    """Wraps ``model``: each call waits before its ``at``-th text delta (counted from 1;
    with ``counting``, only deltas of that text count) until :meth:`release`; calls after
    a release stream straight through until :meth:`hold`. A call with fewer such deltas
    (a tool call, a short rewrite) never waits.
    """

    def __init__(self, model: LLM, *, at: int, counting: str | None = None) -> None:
        self._model = model
        self._at = at
        self._counting = counting
        self._released = asyncio.Event()

    @property
    def name(self) -> str:
        """The wrapped model's label."""
        return self._model.name

    def hold(self) -> None:
        """Hold the next answers again."""
        self._released.clear()

    def release(self) -> None:
        """Let held answers, and every later one, finish."""
        self._released.set()

    async def stream(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolDefinition] = (),
        options: LLMOptions | None = None,
    ) -> AsyncIterator[LLMEvent]:
        """The wrapped model's events, waiting for the release before the ``at``-th delta."""
        deltas = 0
        async for event in self._model.stream(messages, tools, options):
            if isinstance(event, TextDelta) and self._counting in (None, event.text):
                deltas += 1
                if deltas == self._at:
                    await self._released.wait()
            yield event


async def release_once_cut(model: HeldModel, redis: Redis, run_id: str, shards: int) -> None:
    """Release the held answer once a later question asked ``run_id`` to stop: ``interrupt``
    and ``rollback`` admit the question, then set the run's cancel key."""
    cancel = keys.run_cancel(run_id, keys.shard_of(run_id, shards))

    async def asked_to_stop() -> bool:
        return bool(await redis.exists(cancel))

    await wait_for(asked_to_stop, within=20)
    model.release()
