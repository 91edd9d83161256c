"""``agentbus eval claims``: the claim check (`agents.understanding.claims`) on right and
wrong drafts.

Each draft of a judges set (by default the judges' drafts, ``judge_drafts.json``) goes to
the claim check directly, as the last judge's fact-check would send it: the rules alone,
and for each model its one call per draft, alone and with the rules' findings added (what
a judge runs with ``AGENTBUS_CLAIM_CHECK=model``). A check *catches* a wrong draft when it
finds a claim the evidence does not support, and raises a *false alarm* when it finds one
in a right draft; a model reply that cannot be read finds nothing and is counted apart.
"""

from __future__ import annotations

import dataclasses
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any

from agentbus_evals.answer_runs import host_figures
from agentbus_evals.judge_set import Half, JudgeSet, Triple, load_judge_set, triples
from agentbus_evals.system import load_local
from agents.errors import LLMError
from agents.llm.local import LocalLLM
from agents.understanding.claims.model import ModelClaimCheck
from agents.understanding.claims.ports import ClaimDraft, ClaimReport
from agents.understanding.claims.rules import RulesClaimCheck

RULES = "rules"


def drafts_path() -> Path:
    """The shipped judges' drafts."""
    return Path(str(resources.files("agentbus_evals").joinpath("data", "judge_drafts.json")))


@dataclasses.dataclass(frozen=True, slots=True)
class ClaimOutcome:
    """What one check found in one draft."""

    case: str
    kind: str
    checker: str
    flagged: bool
    readable: bool
    findings: list[str]
    seconds: float


def claim_draft(judge_set: JudgeSet, triple: Triple) -> ClaimDraft:
    """The draft as the last judge's fact-check hands it over (today among the computed)."""
    today = judge_set.today.date()
    return ClaimDraft(
        question=triple.case.question,
        draft=triple.draft,
        evidence=list(triple.case.evidence),
        computed=[today.isoformat(), str(today.year)],
    )


def _outcome(triple: Triple, checker: str, report: ClaimReport, seconds: float) -> ClaimOutcome:
    found = [
        f"{c.standing}: {c.claim}" + (f" | {c.evidence}" if c.evidence else "")
        for c in report.findings
    ]
    return ClaimOutcome(
        case=triple.case.id,
        kind=triple.kind,
        checker=checker,
        flagged=bool(report.findings),
        readable=report.readable,
        findings=found,
        seconds=round(seconds, 2),
    )


def rates(outcomes: Sequence[ClaimOutcome]) -> dict[str, Any]:
    """Catch (wrong drafts flagged), false alarms (right drafts flagged), unreadable replies
    and the catch per wrong kind."""
    wrong = [o for o in outcomes if o.kind != "right"]
    right = [o for o in outcomes if o.kind == "right"]
    caught, alarms = sum(o.flagged for o in wrong), sum(o.flagged for o in right)
    kinds = sorted({o.kind for o in wrong})
    return {
        "catch": round(caught / len(wrong), 3) if wrong else None,
        "caught": f"{caught}/{len(wrong)}",
        "false_alarm": round(alarms / len(right), 3) if right else None,
        "false_alarms": f"{alarms}/{len(right)}",
        "unreadable": sum(not o.readable for o in outcomes),
        "catch_by_kind": {
            k: f"{sum(o.flagged for o in wrong if o.kind == k)}/{sum(o.kind == k for o in wrong)}"
            for k in kinds
        },
        "mean_s": round(sum(o.seconds for o in outcomes) / max(1, len(outcomes)), 2),
    }


async def evaluate_claims(
    name: str, judge_set: JudgeSet, chosen: Sequence[Triple], *, progress: bool = False
) -> dict[str, Any]:
    """One checker's row: ``rules``, or a local model alone and with the rules' findings."""
    started = datetime.now(UTC).isoformat(timespec="seconds")
    before = host_figures()
    rules = RulesClaimCheck()
    outcomes: list[ClaimOutcome] = []
    local: LocalLLM | None = None
    model: ModelClaimCheck | None = None
    if name != RULES:
        try:
            local, llm = await load_local(name)
        except LLMError as e:
            return {"model": name, "error": e.code, "message": e.message, "hint": e.hint}
        model = ModelClaimCheck(llm)
    wall = time.perf_counter()
    try:
        for triple in chosen:
            draft = claim_draft(judge_set, triple)
            ruled = await rules.check(draft)
            if model is None:
                outcomes.append(_outcome(triple, RULES, ruled, 0.0))
                continue
            t0 = time.perf_counter()
            modelled = await model.check(draft)
            took = time.perf_counter() - t0
            both = modelled.model_copy(update={"claims": [*modelled.claims, *ruled.claims]})
            outcomes += [
                _outcome(triple, "model", modelled, took),
                _outcome(triple, "model+rules", both, took),
            ]
            if progress:
                o = outcomes[-2]
                mark = "flag" if o.flagged else ("?   " if not o.readable else "ok  ")
                line = f"  {o.case} {o.kind:16} {mark} {o.seconds:6.1f}s {o.findings[:2]}"
                print(line, file=sys.stderr, flush=True)
    finally:
        if local is not None:
            await local.aclose()
    checkers = sorted({o.checker for o in outcomes})
    return {
        "model": name if local is None else local.name,
        "half": "all" if not chosen else sorted({t.case.half for t in chosen}),
        "drafts": len(chosen),
        "checkers": {c: rates([o for o in outcomes if o.checker == c]) for c in checkers},
        "wall_s": round(time.perf_counter() - wall, 1),
        "started": started,
        "loadavg_before": before["loadavg"],
        "loadavg_after": host_figures()["loadavg"],
        "host": before["host"],
        "threads": None if local is None else local.threads,
        "outcomes": [dataclasses.asdict(o) for o in outcomes],
    }


def chosen_triples(cases: Path | None, half: Half | None) -> tuple[JudgeSet, list[Triple]]:
    """The set (the shipped judges' drafts by default) and its triples of ``half``."""
    judge_set = load_judge_set(cases or drafts_path())
    return judge_set, triples(judge_set, half=half)
