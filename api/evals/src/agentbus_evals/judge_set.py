"""The judge eval: the critic and the verifier on the real bus, over right and wrong drafts.

The set ships in ``agentbus_evals/data/judge_eval.json``: cases of a question, the evidence the
judges read and a right draft, plus drafts made wrong on purpose (``wrong_number``,
``not_in_evidence``, ``wrong_entity``, ``missing_caveat``). Each (question, evidence, draft)
triple is published straight to a judge's stream, as the researcher's answer would be:
the critic as the last judge of a standard run, the verifier of an accurate one, each with
its fact-check (the recompute through the gateway). The run is on its last attempt, so
the judge's verdict ends it (the finalizer follows) instead of sending it back.

A judge *catches* a wrong draft when it asks for changes (REVISE, REPLAN,
needs_revision, fail) and raises a *false alarm* when it does that to a right one; an
unreadable verdict is counted apart (``unknown``), never as an approval.

Every case belongs to a half: ``dev`` (the drafts the fact-check's rules and prompts were
written against) or ``test`` (only run). A judge's *precision* is the share of the drafts
it approved that were right; measured on the ``test`` half it is what `agents.checks.judge_trust`
reads to decide whether the judge's approval alone may make a run ``verified: yes``.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import itertools
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from agentbus_evals.draft_scores import FLAGS, UNKNOWN
from agentbus_evals.system import TENANT, eval_system
from agents import graph
from agents.llm.ports import LLM
from bus import keys
from bus.commands import AgentTask, Command, RunSettings, RunState, deadline_in, new_run_id
from bus.events import Critique, Done, Verdict
from bus.publish import publish, read_events
from bus.run_state import ChatMessage, EvidenceItem

WrongKind = Literal["wrong_number", "not_in_evidence", "wrong_entity", "missing_caveat"]
#: ``dev``: what the fact-check's rules and prompts were written against; ``test``: only run.
Half = Literal["dev", "test"]
#: Each judge, the accuracy that makes it the last judge, and its role.
JUDGES: dict[str, tuple[Literal["standard", "accurate"], keys.Role]] = {
    "critic": ("standard", keys.Role.CRITIC),
    "verifier": ("accurate", keys.Role.VERIFIER),
}
ROLES = (keys.Role.CRITIC, keys.Role.VERIFIER, keys.Role.GATEWAY, keys.Role.FINALIZER)


class WrongDraft(BaseModel):
    """A draft made wrong on purpose, and how."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    kind: WrongKind
    draft: str = Field(min_length=1)


class JudgeCase(BaseModel):
    """A question, its evidence, a right draft and wrong ones."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    id: str = Field(min_length=1)
    half: Half
    question: str = Field(min_length=1)
    evidence: list[str] = []
    right: str = Field(min_length=1)
    wrong: list[WrongDraft] = Field(min_length=1)
    expression: str | None = Field(
        default=None, description="The reference model's recompute of the computed figure."
    )


class JudgeSet(BaseModel):
    """The shipped triples."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    about: str = ""
    today: dt.datetime
    cases: list[JudgeCase] = Field(min_length=1)


@dataclass(frozen=True, slots=True)
class Triple:
    """One (question, evidence, draft) to judge; ``kind`` is ``right`` or how it is wrong."""

    case: JudgeCase
    kind: str
    draft: str

    @property
    def wrong(self) -> bool:
        """Whether the draft was made wrong."""
        return self.kind != "right"


@dataclass(frozen=True, slots=True)
class JudgeOutcome:
    """What one judge said of one triple."""

    case: str
    kind: str
    judge: str
    verdict: str
    reason: str
    verified: bool | None
    seconds: float

    @property
    def flagged(self) -> bool:
        """The judge asked for changes."""
        return self.verdict in FLAGS

    @property
    def unknown(self) -> bool:
        """The judge's output could not be read (or it gave none)."""
        return self.verdict in UNKNOWN or self.verdict == ""


def load_judge_set(path: Path | None = None) -> JudgeSet:
    """The shipped triples, or those at ``path``."""
    source = path or Path(
        str(resources.files("agentbus_evals").joinpath("data", "judge_eval.json"))
    )
    return JudgeSet.model_validate_json(source.read_text())


def triples(judge_set: JudgeSet, per_kind: int = 0, half: Half | None = None) -> list[Triple]:
    """Every triple (of one ``half``, if given), kinds taking turns (right, wrong_number,
    ...); ``per_kind`` > 0 keeps the first that many of each kind."""
    by_kind: dict[str, list[Triple]] = {}
    for case in judge_set.cases:
        if half is not None and case.half != half:
            continue
        by_kind.setdefault("right", []).append(Triple(case, "right", case.right))
        for wrong in case.wrong:
            by_kind.setdefault(wrong.kind, []).append(Triple(case, wrong.kind, wrong.draft))
    if per_kind:
        by_kind = {k: ts[:per_kind] for k, ts in by_kind.items()}
    return [t for group in itertools.zip_longest(*by_kind.values()) for t in group if t]


def judge_state(triple: Triple, accuracy: Literal["standard", "accurate"]) -> RunState:
    """The state a judge reads: the question, the evidence, the draft, on the last attempt."""
    evidence = [
        EvidenceItem(ref=i, source_kind="documents", source=f"{triple.case.id}-{i}", text=text)
        for i, text in enumerate(triple.case.evidence, start=1)
    ]
    settings = RunSettings(mode="multi", accuracy=accuracy, use_tools=True, think=False)
    turns = [ChatMessage.user(triple.case.question), ChatMessage.assistant(triple.draft)]
    return RunState(
        question=triple.case.question,
        settings=settings,
        messages=turns,
        base_len=1,
        draft=triple.draft,
        evidence=evidence,
        attempts=graph.MAX_ATTEMPTS - 1,
    )


async def _judge(system: Any, triple: Triple, judge: str, deadline_s: float) -> JudgeOutcome:
    accuracy, role = JUDGES[judge]
    command = Command(
        run_id=new_run_id(),
        tenant_id=TENANT,
        subject="eval",
        role=role,
        deadline=deadline_in(deadline_s),
        payload=AgentTask(state=judge_state(triple, accuracy)),
    )
    started = time.perf_counter()
    await publish(system.redis, command, system.settings.bus)
    async with asyncio.timeout(deadline_s + 30):
        events = [e async for _, e in read_events(system.redis, command.run_id, command.shard)]
    said = [e for e in events if isinstance(e, Critique | Verdict) and e.agent == judge]
    done = next((e for e in events if isinstance(e, Done)), None)
    verdict, reason = "", "no verdict"
    if said:
        last = said[-1]
        verdict = last.verdict
        reason = last.reason if isinstance(last, Critique) else "; ".join(last.reasons)
    return JudgeOutcome(
        case=triple.case.id,
        kind=triple.kind,
        judge=judge,
        verdict=verdict,
        reason=reason[:300],
        verified=done.verified if done is not None else None,
        seconds=round(time.perf_counter() - started, 2),
    )


async def run_judges(
    llm: LLM,
    judge_set: JudgeSet,
    chosen: Sequence[Triple],
    *,
    judges: Sequence[str] = tuple(JUDGES),
    overrides: dict[str, Any] | None = None,
    deadline_s: float = 600,
    on_outcome: Callable[[JudgeOutcome], None] | None = None,
) -> list[JudgeOutcome]:
    """Have each judge review each triple, one at a time, on the real bus.

    Returns:
        One outcome per (triple, judge) reviewed: all, or those before SIGINT/SIGTERM.
    """
    outcomes: list[JudgeOutcome] = []
    async with eval_system(llm, ROLES, judge_set.today, overrides=overrides) as system:
        for triple, judge in itertools.product(chosen, judges):
            asking = asyncio.ensure_future(_judge(system, triple, judge, deadline_s))
            await asyncio.wait({asking, system.running}, return_when=asyncio.FIRST_COMPLETED)
            if not asking.done():  # the workers were drained: stop here
                asking.cancel()
                await asyncio.gather(asking, return_exceptions=True)
                return outcomes
            outcomes.append(asking.result())
            if on_outcome is not None:
                on_outcome(outcomes[-1])
    return outcomes


def _rates(items: Sequence[JudgeOutcome]) -> dict[str, Any]:
    wrong = [o for o in items if o.kind != "right"]
    right = [o for o in items if o.kind == "right"]
    caught, alarms = sum(o.flagged for o in wrong), sum(o.flagged for o in right)
    approved = [o for o in items if not o.flagged and not o.unknown]
    verified = [o for o in items if o.verified is True]
    return {
        "catch": round(caught / len(wrong), 3) if wrong else None,
        "caught": f"{caught}/{len(wrong)}",
        "false_alarm": round(alarms / len(right), 3) if right else None,
        "false_alarms": f"{alarms}/{len(right)}",
        "unknown": sum(o.unknown for o in items),
        "approved": len(approved),
        "approved_right": sum(o.kind == "right" for o in approved),
        "verified_yes": len(verified),
        "verified_yes_right": sum(o.kind == "right" for o in verified),
        "mean_s": round(sum(o.seconds for o in items) / max(1, len(items)), 2),
    }


def judge_summary(model: str, outcomes: Sequence[JudgeOutcome]) -> dict[str, Any]:
    """Per judge: catch rate, false alarms, unknown verdicts, the catch per wrong kind, the
    drafts it approved (``approved``, of them right: ``approved_right``, its precision) and
    the runs that ended ``verified: yes`` (``verified_yes``, of them right)."""
    per_judge: dict[str, Any] = {}
    for judge in sorted({o.judge for o in outcomes}):
        mine = [o for o in outcomes if o.judge == judge]
        kinds = sorted({o.kind for o in mine if o.kind != "right"})
        per_judge[judge] = {
            **_rates(mine),
            "catch_by_kind": {k: _rates([o for o in mine if o.kind == k])["caught"] for k in kinds},
        }
    return {"model": model, "judged": len(outcomes), "judges": per_judge}
