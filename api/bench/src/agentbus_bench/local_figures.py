"""Figures of the local-model benchmark: per call kind and per run, from `CallRecord`s.

Per call kind (``researcher.decision``, ``researcher.answer``, ``planner.structured``, ...):
calls, mean prompt / pre-filled / cached / decoded tokens, decode tokens per second (all
tokens over all decode time), mean time to first token and wall time, and with a draft model
its acceptance rate. Per run: seconds from POST to ``done``, the model's seconds (its calls'
wall time), everything else, and the first answer token after the tool result: from the
start of the decision that follows the tool result to the answer's first token.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any

from agents.llm.local_calls import CallRecord


def by_kind(records: Sequence[CallRecord]) -> dict[str, dict[str, Any]]:
    """Each call kind's figures, kinds sorted by name."""
    groups: dict[str, list[CallRecord]] = {}
    for r in records:
        groups.setdefault(r.kind, []).append(r)
    return {kind: _kind_figures(calls) for kind, calls in sorted(groups.items())}


def _mean(values: Sequence[float]) -> float:
    return round(statistics.fmean(values), 2) if values else 0.0


def _kind_figures(calls: Sequence[CallRecord]) -> dict[str, Any]:
    decode_ms = sum(c.decode_ms for c in calls)
    decoded = sum(c.decode_tokens for c in calls)
    prefilled = sum(c.prefill_tokens for c in calls)
    firsts = [c.first_token_s for c in calls if c.first_token_s is not None]
    row: dict[str, Any] = {
        "calls": len(calls),
        "prompt_tokens": _mean([c.prompt_tokens for c in calls]),
        "prefill_tokens": _mean([c.prefill_tokens for c in calls]),
        "cached_tokens": _mean([c.cached_tokens for c in calls]),
        "decode_tokens": _mean([c.decode_tokens for c in calls]),
        "prefill_tps": _rate(prefilled, sum(c.prefill_ms for c in calls)),
        "decode_tps": _rate(decoded, decode_ms),
        "first_token_s": _mean(firsts),
        "wall_s": _mean([c.wall_s for c in calls]),
    }
    drafted = sum(c.draft_tokens for c in calls)
    if drafted:
        row["draft_acceptance"] = round(sum(c.draft_accepted for c in calls) / drafted, 3)
    return row


def _rate(tokens: int, ms: float) -> float:
    return round(tokens / (ms / 1000), 1) if ms > 0 else 0.0


def after_tool_s(calls: Sequence[CallRecord]) -> float | None:
    """Seconds from the start of the model's call after the tool result to the answer's
    first token (None: the run called no tool, or its answer streamed nothing).

    With the answer folded into that call (``after_tool``), it is that call's own first
    token; otherwise the separate answer's, counted from the decision that preceded it.
    """
    researcher = sorted((c for c in calls if c.agent == "researcher"), key=lambda c: c.started)
    answers = [i for i, c in enumerate(researcher) if c.step in ("answer", "after_tool")]
    if not answers:
        return None
    answer = researcher[answers[-1]]
    if answer.first_token_s is None:
        return None
    if answer.step == "after_tool":
        return round(answer.first_token_s, 2)
    after = [c for c in researcher[: answers[-1]] if c.step in ("decision", "after_tool")]
    if len(after) < 2:
        return None
    return round(answer.started + answer.first_token_s - after[-1].started, 2)


def run_figures(run_id: str, total_s: float, records: Sequence[CallRecord]) -> dict[str, Any]:
    """One run's seconds: total, the model's, everything else, first token after the tool."""
    calls = [r for r in records if r.run_id == run_id]
    model_s = sum(c.wall_s for c in calls)
    return {
        "total_s": round(total_s, 2),
        "model_s": round(model_s, 2),
        "other_s": round(total_s - model_s, 2),
        "model_calls": len(calls),
        "after_tool_s": after_tool_s(calls),
    }


def summary(runs: Sequence[dict[str, Any]], wall_s: float) -> dict[str, Any]:
    """Means over the runs of one configuration, the share correct, and the wall time."""
    after = [r["after_tool_s"] for r in runs if r.get("after_tool_s") is not None]
    return {
        "runs": len(runs),
        "correct": round(sum(bool(r.get("correct")) for r in runs) / max(1, len(runs)), 3),
        "not_done": sum(r.get("status") != "done" for r in runs),
        "mean_total_s": _mean([r["total_s"] for r in runs]),
        "mean_model_s": _mean([r["model_s"] for r in runs]),
        "mean_other_s": _mean([r["other_s"] for r in runs]),
        "mean_after_tool_s": _mean(after) if after else None,
        "wall_s": round(wall_s, 2),
    }
