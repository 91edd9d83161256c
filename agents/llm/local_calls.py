"""Per-call records of the local model: what each completion cost, tagged with who asked.

The runtime reports timings with each finished completion (``prompt_n`` tokens pre-filled,
``cache_n`` reused from the slot's cached prefix, ``predicted_n`` decoded at
``predicted_per_second``, and with a draft model ``draft_n`` / ``draft_n_accepted``).
`LocalLLM` turns them into a `CallRecord` per completion, tagged with the agent (the
worker's role, from the logging context) and the step of the ``stream`` call (``decision``,
``answer``, ``structured``, ``reasoning``), and hands it to its ``on_call`` hook: the local
benchmark (``agentbus bench local``) collects them.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal

import structlog

Step = Literal["reasoning", "decision", "after_tool", "answer", "structured"]


@dataclass(frozen=True, slots=True)
class CallRecord:
    """One completion of the local model.

    Attributes:
        agent: the worker role that asked (``researcher``, ``planner``, ...; "" outside one).
        run_id: the run it served ("" outside a run).
        step: which part of the ``stream`` call: the tool ``decision``, the prose ``answer``,
            ``after_tool`` (after a tool result: one more call or the answer, in one
            generation), a ``structured`` (JSON-schema) answer, or the emulated ``reasoning``.
        started: ``time.perf_counter()`` when the request was handed to the runtime.
        first_token_s: seconds from then to the first generated text (None: none came).
        wall_s: seconds from then to the end of the completion.
        prompt_tokens: the prompt's length in tokens.
        prefill_tokens: tokens actually pre-filled (the prompt less the cached prefix).
        cached_tokens: prompt tokens reused from the slot's cache.
        decode_tokens: tokens generated.
        prefill_ms: the runtime's time pre-filling.
        decode_ms: the runtime's time decoding.
        decode_tps: tokens generated per second of decoding.
        draft_tokens: tokens the draft model proposed (0 without speculative decoding).
        draft_accepted: of those, the ones the model accepted.
        slot: the slot requested (-1: the runtime chose).
    """

    agent: str
    run_id: str
    step: Step
    started: float
    first_token_s: float | None
    wall_s: float
    prompt_tokens: int
    prefill_tokens: int
    cached_tokens: int
    decode_tokens: int
    prefill_ms: float
    decode_ms: float
    decode_tps: float
    draft_tokens: int = 0
    draft_accepted: int = 0
    slot: int = -1

    @property
    def kind(self) -> str:
        """``agent.step`` (``researcher.decision``), or the step alone outside a worker."""
        return f"{self.agent}.{self.step}" if self.agent else self.step

    def as_dict(self) -> dict[str, Any]:
        """JSON form, with ``kind``."""
        return asdict(self) | {"kind": self.kind}


def caller() -> tuple[str, str]:
    """The ``(agent, run_id)`` bound in the logging context by the worker running the step."""
    bound = structlog.contextvars.get_contextvars()
    return str(bound.get("role", "")), str(bound.get("run_id", ""))


def record_of(
    timings: dict[str, Any],
    *,
    agent: str,
    run_id: str,
    step: Step,
    started: float,
    first_token_s: float | None,
    wall_s: float,
    slot: int = -1,
) -> CallRecord:
    """A `CallRecord` from the runtime's ``timings`` of one completion (missing fields: 0)."""

    def number(key: str) -> float:
        value = timings.get(key)
        return float(value) if isinstance(value, int | float) else 0.0

    prefill, cached = int(number("prompt_n")), int(number("cache_n"))
    return CallRecord(
        agent=agent,
        run_id=run_id,
        step=step,
        started=started,
        first_token_s=first_token_s,
        wall_s=wall_s,
        prompt_tokens=prefill + cached,
        prefill_tokens=prefill,
        cached_tokens=cached,
        decode_tokens=int(number("predicted_n")),
        prefill_ms=number("prompt_ms"),
        decode_ms=number("predicted_ms"),
        decode_tps=number("predicted_per_second"),
        draft_tokens=int(number("draft_n")),
        draft_accepted=int(number("draft_n_accepted")),
        slot=slot,
    )
