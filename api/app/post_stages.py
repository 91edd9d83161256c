"""Where ``POST /api/v1/runs`` spends its time, stage by stage (``agentbus bench api``).

The metrics middleware starts a :class:`StageClock` for the request (:func:`timed`, a
context variable: nothing is passed through the code it times); each :func:`mark` observes
the time since the previous one into ``agentbus_api_post_stage_seconds`` (label ``stage``),
so consecutive stages add up to the request's time in the app:

* ``before_handler``: routing, reading and validating the body, the auth dependency
  (``auth`` is also observed on its own);
* ``prefs``, ``idempotency``, ``rate``, ``conversation``, ``quota``, ``publish`` (building
  and encoding the command, then the publish script): the run starter;
* ``respond``: the response model, its JSON and the headers written.

A mark costs one ``perf_counter`` and one histogram observe (~2 µs); outside a timed
request (websocket asks, admission, the CLI) it is one context-variable read.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Generator
from contextvars import ContextVar

from prometheus_client import Histogram

STAGES = (
    "before_handler",
    "auth",
    "prefs",
    "idempotency",
    "rate",
    "conversation",
    "quota",
    "publish",
    "respond",
)
POST_STAGE_SECONDS = Histogram(
    "agentbus_api_post_stage_seconds",
    "Time of each stage of POST /api/v1/runs (see api.app.post_stages).",
    ["stage"],
    buckets=(0.0001, 0.00025, 0.0005, 0.001, 0.002, 0.004, 0.008, 0.016, 0.032, 0.128, 0.5),
)
_BY_STAGE = {stage: POST_STAGE_SECONDS.labels(stage) for stage in STAGES}


class StageClock:
    """Marks the end of each stage of one request."""

    __slots__ = ("_last",)

    def __init__(self) -> None:
        self._last = time.perf_counter()

    def mark(self, stage: str) -> None:
        """Observe the time since the previous mark as ``stage``'s."""
        now = time.perf_counter()
        _BY_STAGE[stage].observe(now - self._last)
        self._last = now


_CLOCK: ContextVar[StageClock | None] = ContextVar("agentbus_post_stage_clock", default=None)


@contextlib.contextmanager
def timed() -> Generator[StageClock, None, None]:
    """Time the stages of the request running in this context."""
    clock = StageClock()
    token = _CLOCK.set(clock)
    try:
        yield clock
    finally:
        _CLOCK.reset(token)


def timing() -> bool:
    """Whether the request running in this context is timed."""
    return _CLOCK.get() is not None


def mark(stage: str) -> None:
    """End ``stage`` of the timed request in this context (nothing outside one)."""
    clock = _CLOCK.get()
    if clock is not None:
        clock.mark(stage)


def observe(stage: str, seconds: float) -> None:
    """Observe a stage timed on its own (``auth``, inside ``before_handler``)."""
    _BY_STAGE[stage].observe(seconds)
