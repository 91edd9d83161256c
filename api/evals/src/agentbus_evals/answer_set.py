"""The answer eval: questions that need a tool, scored on the answer and the tool chosen.

Two sets ship in ``agentbus_evals/data/``: ``answer_eval.json`` (arithmetic with the calculator,
dates relative to a fixed "today" with current_time, facts from small fictional documents
with search_docs) and the harder ``answer_eval_hard.json`` (two facts plus arithmetic,
durations, percentages, code answers, and questions the documents do not answer). Each
question is asked as a run through the whole system, in single or multi mode (planner,
critic, verifier and the judges' fact-check included): every role's workers on an embedded
Redis and store in a temporary folder, with the documents ingested into a throw-away vector
store. The agents' clock and the current_time
tool are both fixed to the set's "today", so date answers are checkable.

An answer is correct when it contains the expected value: a number (within a small
tolerance, thousands separators allowed), a date (ISO or written out), or one of a list of
strings (case-insensitive). The tool choice is right when the run's first tool call is the
expected tool (no call, for a question whose tool is ``none``). In multi mode each judged
draft is scored too (`agentbus_evals.draft_scores`): which judge flagged a wrong or a right one,
and whether a wrong answer ended ``verified``.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import itertools
import json
import math
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from agentbus_evals.draft_scores import JudgedDraft, judged_drafts
from agentbus_evals.system import TENANT, eval_system
from agents.checks.recompute import figures
from agents.llm.ports import LLM
from agents.understanding.language.numbers import CITATION
from api.compose.settings import AppSettings
from bus import keys
from bus.commands import AgentTask, Command, RunSettings, RunState, deadline_in, new_run_id
from bus.events import Citations
from bus.publish import publish, read_events
from bus.transcript import fold
from retrieval.citations import SEARCH_TOOL
from retrieval.gather_source import DOCUMENTS

ROLES = (
    keys.Role.INTAKE,
    keys.Role.PLANNER,
    keys.Role.RETRIEVAL,
    keys.Role.RESEARCHER,
    keys.Role.GATEWAY,
    keys.Role.CRITIC,
    keys.Role.VERIFIER,
    keys.Role.FINALIZER,
)
SETS = {"standard": "answer_eval.json", "hard": "answer_eval_hard.json"}
NO_TOOL = "none"
#: ``dev``: what the judges' rules and prompts may be written against; ``test``: only run.
Half = Literal["dev", "test"]
#: Each run's deadline unless the caller says otherwise (seconds).
DEADLINE_S = 600
Kind = Literal[
    "arithmetic",
    "date",
    "document",
    "two_facts",
    "duration",
    "percentage",
    "code",
    "not_in_documents",
]
#: Relative tolerance of a number match (and 0.005 absolute, for rounded decimals).
REL_TOL = 1e-4
ABS_TOL = 0.005
_NUMBER = re.compile(r"(?<![\w.])-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?")


class Expect(BaseModel):
    """What a correct answer contains: exactly one of a number, a duration in minutes (also
    right written as hours and minutes: 225 is "3 h 45 min"), a date, or any of strings."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    number: float | None = None
    minutes: float | None = None
    date: dt.date | None = None
    any: list[str] | None = Field(default=None, min_length=1)

    @model_validator(mode="after")
    def _one(self) -> Expect:
        given = (self.number, self.minutes, self.date, self.any)
        if sum(v is not None for v in given) != 1:
            raise ValueError("expect needs exactly one of number, minutes, date, any")
        return self


class Call(BaseModel):
    """One tool call of the reference model."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    tool: str = Field(min_length=1)
    arguments: dict[str, Any] = {}


class Question(BaseModel):
    """One question, the tool a good run calls first, and the answer it must contain."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    id: str = Field(min_length=1)
    half: Half | None = Field(
        default=None, description="dev (rules may be written against it) or test (only run)."
    )
    kind: Kind
    question: str = Field(min_length=1)
    tool: str = Field(min_length=1, description=f"The first tool a good run calls, or {NO_TOOL!r}.")
    arguments: dict[str, Any] = Field(description="A call of `tool` that answers it.")
    then: list[Call] = Field(default=[], description="The reference model's further calls.")
    reference: str | None = Field(
        default=None, description="The reference model's answer, where no tool result is it."
    )
    expect: Expect


class Document(BaseModel):
    """A document the eval ingests before asking (Markdown text)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    name: str = Field(pattern=r"^[a-z0-9-]+$")
    text: str = Field(min_length=1)


class AnswerSet(BaseModel):
    """The shipped question set."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    about: str = ""
    today: dt.datetime
    documents: list[Document]
    questions: list[Question] = Field(min_length=1)

    @model_validator(mode="after")
    def _unique(self) -> AnswerSet:
        if self.today.tzinfo is None:
            raise ValueError("today needs a UTC offset")
        ids = [q.id for q in self.questions]
        if len(set(ids)) != len(ids):
            raise ValueError("question ids must be unique")
        return self


def load_set(path: Path | None = None, name: str = "standard") -> AnswerSet:
    """A shipped set (``standard`` or ``hard``), or the one at ``path``."""
    source = path or Path(str(resources.files("agentbus_evals").joinpath("data", SETS[name])))
    return AnswerSet.model_validate_json(source.read_text())


def in_half(answer_set: AnswerSet, half: Half | None) -> AnswerSet:
    """The set's questions of one half (None: all); a set without halves has no ``test``
    question and no ``dev`` one."""
    if half is None:
        return answer_set
    kept = [q for q in answer_set.questions if q.half == half]
    return answer_set.model_copy(update={"questions": kept})


def in_turns(answer_set: AnswerSet, per_kind: int = 0) -> AnswerSet:
    """The set with its kinds taking turns (arithmetic, date, document, arithmetic, ...), so
    the first questions, or a run stopped early, cover every kind; ``per_kind`` > 0 keeps
    only the first that many of each kind."""
    by_kind: dict[str, list[Question]] = {}
    for q in answer_set.questions:
        by_kind.setdefault(q.kind, []).append(q)
    if per_kind:
        by_kind = {k: qs[:per_kind] for k, qs in by_kind.items()}
    turns = [q for group in itertools.zip_longest(*by_kind.values()) for q in group if q]
    return answer_set.model_copy(update={"questions": turns})


def numbers_in(text: str) -> list[float]:
    """Every number written in ``text`` (``7,006,652`` is one number)."""
    return [float(m.replace(",", "")) for m in _NUMBER.findall(text)]


def _date_forms(day: dt.date) -> list[str]:
    month, d, y = day.strftime("%B"), day.day, day.year
    suffix = "th" if 10 <= d % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(d % 10, "th")
    return [
        day.isoformat(),
        f"{d} {month} {y}",
        f"{d}{suffix} {month} {y}",
        f"{d:02d} {month} {y}",
        f"{month} {d}, {y}",
        f"{month} {d} {y}",
        f"{month} {d}{suffix}, {y}",
        f"{d}{suffix} of {month} {y}",
        f"{d}{suffix} of {month}, {y}",
        f"{d:02d}/{day.month:02d}/{y}",
    ]


def is_correct(answer: str, expect: Expect) -> bool:
    """Whether ``answer`` contains the expected value (its citation markers left out)."""
    answer = CITATION.sub("", answer)  # "[3]" names a passage: it is not the figure 3
    if expect.minutes is not None:
        return any(abs(f - expect.minutes) < 0.5 for f in figures(answer))
    if expect.number is not None:
        want = expect.number
        return any(
            math.isclose(n, want, rel_tol=REL_TOL, abs_tol=ABS_TOL) for n in numbers_in(answer)
        )
    text = " ".join(answer.split()).casefold()
    if expect.date is not None:
        return any(form.casefold() in text for form in _date_forms(expect.date))
    return any(s.casefold() in text for s in expect.any or ())


@dataclass(frozen=True, slots=True)
class Outcome:
    """One question's run: status, tools called (in order), the answer and its scores, and
    (multi mode) what the judges said of each draft and concluded at the end."""

    id: str
    kind: str
    status: str
    tools: list[str]
    answer: str
    correct: bool
    tool_ok: bool
    seconds: float
    verified: bool | None = None
    verified_reason: str | None = None
    drafts: tuple[JudgedDraft, ...] = ()
    recomputable: bool = False
    from_documents: bool = False
    cited: tuple[str, ...] = ()


def from_documents(question: Question) -> bool:
    """Whether the reference answer reads the documents (it calls search_docs)."""
    return SEARCH_TOOL in (question.tool, *(c.tool for c in question.then))


def recomputable(question: Question) -> bool:
    """Whether a tool can recompute the answer: the reference answer uses the calculator."""
    return "calculator" in (question.tool, *(c.tool for c in question.then))


def score(
    question: Question,
    status: str,
    tools: list[str],
    answer: str,
    seconds: float,
    *,
    verified: bool | None = None,
    verified_reason: str | None = None,
    drafts: Sequence[JudgedDraft] = (),
    cited: Sequence[str] = (),
) -> Outcome:
    """Score one run (a run that did not end ``done`` is not correct); ``cited``: the
    sources of the citations the answer kept."""
    tool_ok = not tools if question.tool == NO_TOOL else bool(tools) and tools[0] == question.tool
    return Outcome(
        id=question.id,
        kind=question.kind,
        status=status,
        tools=tools,
        answer=answer,
        correct=status == "done" and is_correct(answer, question.expect),
        tool_ok=tool_ok,
        seconds=round(seconds, 2),
        verified=verified,
        verified_reason=verified_reason,
        drafts=tuple(drafts),
        recomputable=recomputable(question),
        from_documents=from_documents(question),
        cited=tuple(cited),
    )


def summary(model: str, outcomes: Sequence[Outcome]) -> dict[str, Any]:
    """Share correct, tool-choice accuracy and mean latency, overall and per kind."""

    def block(items: Sequence[Outcome]) -> dict[str, Any]:
        n = max(1, len(items))
        return {
            "questions": len(items),
            "correct": round(sum(o.correct for o in items) / n, 3),
            "tool_choice": round(sum(o.tool_ok for o in items) / n, 3),
            "mean_s": round(sum(o.seconds for o in items) / n, 2),
            **cite_rate(items),
            **judge_rates(items),
        }

    kinds = sorted({o.kind for o in outcomes})
    return {
        "model": model,
        **block(outcomes),
        "by_kind": {k: block([o for o in outcomes if o.kind == k]) for k in kinds},
        "errors": sum(o.status != "done" for o in outcomes),
    }


def cite_rate(outcomes: Sequence[Outcome]) -> dict[str, Any]:
    """``cited``: the answers to questions about the documents that cite a passage (a kept
    ``[n]``), as "k/n"; nothing when no question is about the documents."""
    about = [o for o in outcomes if o.from_documents]
    if not about:
        return {}
    return {"cited": f"{sum(bool(o.cited) for o in about)}/{len(about)}"}


def judge_rates(outcomes: Sequence[Outcome]) -> dict[str, Any]:
    """How the judges did on these runs' drafts (multi mode; nothing in single mode).

    ``catch``: wrong drafts a judge flagged (REVISE, REPLAN, needs_revision, fail) over
    wrong drafts judged; ``false_alarm``: right drafts flagged over right drafts judged;
    ``unknown``: drafts whose judges' output could not be read; ``wrong_verified``: wrong
    answers that ended ``verified: true``, and of them ``wrong_verified_recomputable``
    those a tool could recompute (the reference answer uses the calculator);
    ``verified_yes``: runs that ended ``done`` and ``verified: true``, and of them
    ``verified_yes_right`` the right answers (the promise ``verified`` makes, kept).
    """
    drafts = [(o.kind, d) for o in outcomes for d in o.drafts]
    if not drafts:
        return {}
    wrong = [d for _, d in drafts if not d.correct]
    right = [d for _, d in drafts if d.correct]
    verified = [o for o in outcomes if o.status == "done" and o.verified is True]
    verified_wrong = [o for o in verified if not o.correct]
    return {
        "drafts_judged": len(drafts),
        "catch": _share(sum(d.flagged for d in wrong), len(wrong)),
        "caught": f"{sum(d.flagged for d in wrong)}/{len(wrong)}",
        "false_alarm": _share(sum(d.flagged for d in right), len(right)),
        "false_alarms": f"{sum(d.flagged for d in right)}/{len(right)}",
        "unknown": sum(d.unknown for _, d in drafts),
        "wrong_verified": len(verified_wrong),
        "wrong_verified_recomputable": sum(o.recomputable for o in verified_wrong),
        "verified_yes": len(verified),
        "verified_yes_right": len(verified) - len(verified_wrong),
    }


def _share(part: int, whole: int) -> float | None:
    return round(part / whole, 3) if whole else None


def outcome_dict(outcome: Outcome) -> dict[str, Any]:
    """JSON form of one outcome."""
    return asdict(outcome)


async def run_set(
    llm: LLM,
    answer_set: AnswerSet,
    *,
    overrides: dict[str, Any] | None = None,
    deadline_s: float = DEADLINE_S,
    on_outcome: Callable[[Outcome], None] | None = None,
    mode: Literal["single", "multi"] = "single",
    accuracy: Literal["standard", "accurate"] = "standard",
    context: bool = True,
) -> list[Outcome]:
    """Ask every question of ``answer_set`` through the system, one at a time.

    Args:
        llm: the model the agents use.
        answer_set: the questions, their documents and "today".
        mode: single (researcher alone) or multi (planner, researcher, judges).
        accuracy: standard (the critic judges) or accurate (then the verifier).
        context: the runs' source is the set's documents, as the starter gives a tenant
            with documents (single mode's context, multi mode's gather and re-query).
        overrides: settings on top of the environment's (``AppSettings.load`` names); the
            data folder, Redis, store and vector store default to a temporary embedded set.
        deadline_s: each run's deadline.
        on_outcome: called after each question (progress).

    Returns:
        One outcome per question asked: all of them, or those before SIGINT/SIGTERM.
    """
    docs = [(d.name, d.text) for d in answer_set.documents]
    outcomes: list[Outcome] = []
    async with eval_system(
        llm, ROLES, answer_set.today, documents=docs, overrides=overrides
    ) as system:
        for q in answer_set.questions:
            run = RunSettings(
                mode=mode,
                accuracy=accuracy,
                use_tools=True,
                think=False,
                sources=[DOCUMENTS] if context and docs else [],
            )
            asking = asyncio.ensure_future(_ask(system.redis, system.settings, q, run, deadline_s))
            await asyncio.wait({asking, system.running}, return_when=asyncio.FIRST_COMPLETED)
            if not asking.done():  # SIGINT/SIGTERM drained the workers: stop here
                asking.cancel()
                await asyncio.gather(asking, return_exceptions=True)
                break
            outcome = asking.result()
            outcomes.append(outcome)
            if on_outcome is not None:
                on_outcome(outcome)
    return outcomes


async def _ask(
    redis: Any, s: AppSettings, q: Question, run: RunSettings, deadline_s: float
) -> Outcome:
    command = Command(
        run_id=new_run_id(),
        tenant_id=TENANT,
        subject="eval",
        role=keys.Role.INTAKE,
        deadline=deadline_in(deadline_s),
        payload=AgentTask(state=RunState(question=q.question, settings=run)),
    )
    started = time.perf_counter()
    await publish(redis, command, s.bus)
    async with asyncio.timeout(deadline_s + 30):
        events = [e async for _, e in read_events(redis, command.run_id, command.shard)]
    seconds = time.perf_counter() - started
    transcript = fold(events)
    # The researcher's calls: the judges' fact-check calls are not the run's tool choice.
    tools = [e.tool for e in events if e.type == "tool_call" and e.agent == "researcher"]
    done = next((e for e in reversed(events) if e.type == "done"), None)
    return score(
        q,
        transcript.status or "unknown",
        tools,
        transcript.answer,
        seconds,
        verified=done.verified if done is not None else None,
        verified_reason=done.verified_reason if done is not None else None,
        drafts=judged_drafts(events, lambda text: is_correct(text, q.expect)),
        # The finalizer's citations: those the answer kept (the gather's list what was found).
        cited=[
            c.source
            for e in events
            if isinstance(e, Citations) and e.agent == "finalizer"
            for c in e.items
        ],
    )


def to_json(rows: Sequence[dict[str, Any]]) -> str:
    """One JSON object per line."""
    return "\n".join(json.dumps(r) for r in rows)
