"""The verifier (accurate mode): a schema-checked verdict from a bounded structured call.

The call is retried a bounded number of times; output that still cannot be read is
``unknown``: shown as such, never a pass, and the run ends ``verified: null``. A
``needs_revision`` or ``fail`` routes one more researcher pass within the reflection cap
shared with the critic. A fact-check that recomputed one of the draft's figures and found
it wrong (`agents.checks.recompute`) makes the verdict ``needs_revision`` with the recomputed
value among the reasons, whatever the model said. The model's own ``needs_revision`` or
``fail`` of a draft judged against evidence counts only when it quotes evidence that states
otherwise (`agents.checks.flag_evidence`), or names a claim of the draft whose evidence,
set beside it, does; else it is ``unknown``. A claim the model
says the evidence set beside it states otherwise, founded the same way, makes the verdict
``needs_revision`` (`agents.checks.claim_verdicts`).
"""

from __future__ import annotations

import dataclasses
from typing import Any, cast

import jsonschema
from jsonschema.protocols import Validator

from agents import gates, graph
from agents.checks import claim_verdicts, judge
from agents.checks.claim_verdicts import CLAIMS, STANDINGS
from agents.checks.verdicts import QUOTES, without_scaffolding
from agents.deps import AgentDeps
from agents.llm.json_reply import json_object
from agents.llm.ports import LLM, ChatMessage, LLMOptions, TextDelta, Usage
from agents.state import (
    add_usage,
    another_attempt,
    llm_options,
    retry_state,
    superseded,
    toward,
)
from agents.understanding.claims.pairs import MAX_PAIRS
from bus.commands import AgentTask, Command
from bus.events import ClientEvent, Verdict
from bus.run_state import Review, RunState
from bus.runtime.context import StepContext, StepResult
from bus.runtime.worker import Handler

AGENT = "verifier"
STRUCTURED_TRIES = 2
VERDICT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        **CLAIMS,
        "verdict": {"enum": ["pass", "needs_revision", "fail"]},
        "reasons": {"type": "array", "items": {"type": "string"}, "maxItems": 5},
        **QUOTES,
    },
    "required": [*CLAIMS, "verdict", "reasons", *QUOTES],
    "additionalProperties": False,
}
# Checked against its metaschema once, here; `jsonschema.validate` would re-check the
# schema on every call (measured: a quarter of the multi benchmark's CPU). A reply without
# the quotes (a server that honours no schema) is still a verdict: they are optional here.
_VERDICT: Validator = jsonschema.Draft202012Validator(
    {**VERDICT_SCHEMA, "required": ["verdict", "reasons"]}
)
_VERDICTS = ("pass", "needs_revision", "fail")
_QUOTE_LIMITS = {name: rule["maxLength"] for name, rule in QUOTES.items()}


def verdict_fits(doc: object) -> bool:
    """True when ``doc`` is valid against `_VERDICT` (the quotes optional), checked by
    hand: the schema's validator walks it in Python at ~1% of a multi accurate run. Never
    true of a document the validator refuses (a test holds them together); a False is then
    asked of the validator, whose error says what is wrong."""
    if type(doc) is not dict:
        return False
    fields = cast("dict[str, object]", doc)
    verdict, reasons = fields.get("verdict"), fields.get("reasons")
    if type(verdict) is not str or verdict not in _VERDICTS or type(reasons) is not list:
        return False
    claims = fields.get("claims", [])
    if type(claims) is not list:
        return False
    standings = cast("list[object]", claims)
    if len(standings) > MAX_PAIRS or any(
        type(c) is not str or c not in STANDINGS for c in standings
    ):
        return False
    for name in fields.keys() - {"verdict", "reasons", "claims"}:
        quote, limit = fields[name], _QUOTE_LIMITS.get(name)
        if limit is None or type(quote) is not str or len(quote) > limit:
            return False
    said = cast("list[object]", reasons)
    return len(said) <= 5 and all(type(r) is str for r in said)


async def structured_verdict(
    llm: LLM, request: list[ChatMessage], options: LLMOptions
) -> tuple[dict[str, Any], Usage | None]:
    """Ask for a verdict up to ``STRUCTURED_TRIES`` times; unreadable output is ``unknown``.

    The reply is read tolerantly (a JSON object inside prose or a code fence counts), for
    servers that honour no schema.
    """
    usage: Usage | None = None
    problem = "no reply"
    for _ in range(STRUCTURED_TRIES):
        parts: list[str] = []
        async for event in llm.stream(request, (), options):
            if isinstance(event, TextDelta):
                parts.append(event.text)
            elif isinstance(event, Usage):
                usage = event
        reply = "".join(parts)
        try:
            doc = json_object(reply)
            if doc is None:
                raise ValueError(f"no JSON object in {reply.strip()[:80]!r}")
            if not verdict_fits(doc):
                _VERDICT.validate(doc)
            return doc, usage
        except (ValueError, jsonschema.ValidationError) as e:
            problem = str(e).splitlines()[0][:200]
    return {"verdict": "unknown", "reasons": [f"verdict output unreadable: {problem}"]}, usage


def make_verifier(deps: AgentDeps) -> Handler:
    """The verifier role's handler."""

    async def handle(ctx: StepContext, command: Command) -> StepResult:
        checking, state, request = await judge.review_input(AGENT, command, deps)
        if checking is not None:
            return checking
        s = state.settings
        options = llm_options(
            s, AGENT, response_schema=VERDICT_SCHEMA, max_tokens=300, temperature=0
        )
        doc, usage = await structured_verdict(deps.llm, request, options)
        doc["reasons"] = [without_scaffolding(str(r), VERDICT_SCHEMA) for r in doc["reasons"]]
        if doc["verdict"] in ("needs_revision", "fail") and not state.judge.mismatches:
            doc = _founded(doc, state, deps)
        if doc["verdict"] not in ("needs_revision", "fail") and not state.judge.mismatches:
            # A claim the model says the evidence beside it states otherwise, founded.
            flagged = judge.claim_flag(AGENT, state, deps, doc)
            if flagged is not None:
                doc = {"verdict": "needs_revision", "reasons": [claim_verdicts.reason(flagged)]}
        if state.judge.mismatches:
            doc: dict[str, Any] = {
                "verdict": "needs_revision",
                "reasons": list(state.judge.mismatches),
            }
        if state.judge.note:
            doc["reasons"] = [*doc["reasons"], state.judge.note]
        # A small model may give one reason several times, or an empty one (a field name
        # it ran on into, removed): each is shown once, and none is blank.
        said = (str(r).strip() for r in doc["reasons"])
        doc["reasons"] = list(dict.fromkeys(r for r in said if r))
        shown = Verdict(
            run_id=command.run_id,
            step_id=command.step_id,
            agent=AGENT,
            verdict=doc["verdict"],
            reasons=doc["reasons"],
        )
        reason = "; ".join(doc["reasons"]) or doc["verdict"]
        review = Review(agent=AGENT, verdict=doc["verdict"], reason=reason)
        state = state.evolve(
            usage=add_usage(state.usage, usage, AGENT), verdicts=[*state.verdicts, review]
        )
        events: list[ClientEvent] = [shown]
        draft = state.draft
        # A team sends the draft back only where it has an edge for it.
        if (
            doc["verdict"] in ("needs_revision", "fail")
            and another_attempt(state)
            and graph.has_edge(s, AGENT, "revise")
        ):
            events.append(superseded(command, state, review))
            node = graph.next_node(s, AGENT, "revise")
            state = toward(retry_state(state, review), node, draft, review)
        elif (node := graph.next_node(s, AGENT, "pass")) == "answer_gate":
            paused = await gates.suspend(
                ctx,
                deps,
                state,
                "approve_answer",
                answer=state.draft,
                critique=_last_critique(state),
            )
            return dataclasses.replace(paused, events=[shown, *paused.events])
        else:
            state = toward(state, node, draft)
        target = graph.role_of(s, node)
        return StepResult(next=[command.follow(target, AgentTask(state=state))], events=events)

    return handle


def _founded(doc: dict[str, Any], state: RunState, deps: AgentDeps) -> dict[str, Any]:
    """The model's request for changes, or ``unknown`` when it is no refutation
    (`agents.checks.flag_evidence`)."""
    said, quoted = str(doc.get("draft_says") or ""), str(doc.get("evidence_says") or "")
    why = judge.flag_unfounded(AGENT, state, deps, said, quoted)
    if why is None:
        return doc
    named = judge.named_claim(AGENT, state, deps, said)
    if named is not None:  # its quote is not the evidence's words; the claim it names is
        return {**doc, "reasons": [*doc["reasons"], claim_verdicts.reason(named)]}
    reasons = [f"{doc['verdict']} not counted: {why}", *map(str, doc["reasons"])]
    return {"verdict": "unknown", "reasons": reasons}


def _last_critique(state: RunState) -> str | None:
    return state.critiques[-1].reason if state.critiques else None
