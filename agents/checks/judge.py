"""The judge fact-check, run by the last judge (critic in standard, verifier in accurate).

Two independent, bounded checks, each failing open (a model error in the tool pass
leaves a ``note`` the judge adds to its reasons): a re-query of the retrieval sources
(a gather whose merge comes back here) and a verify-only tool pass of at most
``VERIFIER_TOOL_HOPS`` gateway round trips. When the draft states a figure and the
calculator is offered, the tool pass is a recompute (`agents.checks.recompute`): the model names
an expression per figure, the gateway computes them, and a figure recomputed differently
is a mismatch the judge turns into a revision. Whether a judge runs them, and where their
steps go, is the graph's ``recheck`` and ``fact_check`` edges. Progress lives in
``state.judge`` (`bus.run_state.JudgeProgress`), so the judge's worker keeps nothing
between the steps.
"""

from __future__ import annotations

import datetime as dt
import textwrap
from typing import Any

from agents import graph, model_input, prompts
from agents import state as shared
from agents.checks import claim_verdicts, flag_evidence, recompute, spelled_checks
from agents.deps import AgentDeps, tenant_tools
from agents.errors import LLMError
from agents.llm.ports import TextDelta, ToolDefinition, Usage
from agents.sources import fan_out
from agents.understanding.claims import pairs
from agents.understanding.claims.ports import ClaimDraft
from bus.commands import AgentTask, Command, ToolCallBatch, ToolResults
from bus.run_state import ChatMessage, Recompute, RunState, ToolCall
from bus.runtime.context import StepResult
from retrieval.citations import refs_end

VERIFIER_TOOL_HOPS = 2


def runs_fact_check(node: str, state: RunState) -> bool:
    """True when the graph gives this judge a fact-check for this run."""
    s = state.settings
    return graph.has_edge(s, node, "recheck") or graph.has_edge(s, node, "fact_check")


def arrived(node: str, command: Command) -> RunState:
    """The state a judge's step starts from: the fact-check's tool results are appended to
    the fact-check's own thread (the researcher's is never touched), one more round trip."""
    task = command.payload
    if isinstance(task, ToolResults):
        judge = task.state.judge
        thread = shared.with_results(judge.messages, task.results)
        state = task.state.with_judge(messages=thread, hops=judge.hops + 1)
        return state.refs_used_to(max(task.next_ref, refs_end(task.results)))
    if isinstance(task, AgentTask):
        return task.state
    raise TypeError(f"{node} got a {task.kind} payload")


async def review_input(
    node: str, command: Command, deps: AgentDeps
) -> tuple[StepResult | None, RunState, list[ChatMessage]]:
    """A judge's start: run the fact-check if this judge owns it, then what to review.

    Returns:
        A step to publish while the fact-check is under way (None once it is done), the
        state, and the messages the judge's own call reads.
    """
    state = arrived(node, command)
    if state.judge.phase != "done" and runs_fact_check(node, state):
        moved = await advance(node, command, state, deps)
        if isinstance(moved, StepResult):
            return moved, state, []
        state = moved
    s = state.settings
    system = prompts.dated(prompts.for_agent(node, s.agent_prompts, s.mode), deps.clock())
    claims = pairs.shown(claim_pairs(state))
    return None, state, model_input.review_messages(system, state, state.judge.findings, claims)


def claim_pairs(state: RunState) -> list[pairs.Pair]:
    """The draft's claims, each beside the passage sentence about it
    (`agents.understanding.claims.pairs`); none without passages."""
    passages = [e.text for e in (*state.evidence, *state.judge.recheck) if e.text.strip()]
    if not passages or not (state.draft or "").strip():
        return []
    return pairs.pairs(state.question, state.draft or "", passages)


def claim_flag(
    node: str, state: RunState, deps: AgentDeps, reply: dict[str, Any] | None
) -> pairs.Pair | None:
    """The claim the judge's reply (its JSON) says the evidence beside it differs from,
    when that flag is founded (`agents.checks.claim_verdicts`); None otherwise."""
    said = claim_verdicts.standings(reply)
    if "differs" not in said:
        return None
    return claim_verdicts.flagged(
        claim_pairs(state), said, lambda d, e: flag_unfounded(node, state, deps, d, e)
    )


def named_claim(node: str, state: RunState, deps: AgentDeps, draft_says: str) -> pairs.Pair | None:
    """The claim a judge's own request for changes names (its ``draft_says``), when the
    evidence set beside it founds the request (`agents.checks.claim_verdicts.named`)."""
    found = claim_verdicts.named(claim_pairs(state), draft_says)
    return claim_verdicts.flagged(
        found, ["differs"] * len(found), lambda d, e: flag_unfounded(node, state, deps, d, e)
    )


async def advance(
    node: str, command: Command, state: RunState, deps: AgentDeps
) -> StepResult | RunState:
    """Run the fact-check's next move: a step to publish, or the state once it is done.

    Not started: re-query the sources (if the graph has this judge's ``recheck`` edge).
    Then (or after the re-query) the tool pass, one model turn per step, until the model
    stops calling tools or ``VERIFIER_TOOL_HOPS`` round trips are spent. Then ``done``.
    """
    s = state.settings
    judge = state.judge
    if judge.phase is None and graph.has_edge(s, node, "recheck"):
        rechecking = state.evolve(judge=judge.evolve(phase="recheck"))
        to = graph.next_role(s, node, "recheck")
        return StepResult(next=fan_out(command, rechecking, "recheck", to))
    if judge.phase in (None, "recheck"):
        judge = judge.evolve(phase="tools")
    if judge.phase == "tools" and graph.has_edge(s, node, "fact_check"):
        step = await _tool_pass(node, command, state.evolve(judge=judge), deps)
        if isinstance(step, StepResult):
            return step
        judge = step.judge
    state = state.evolve(judge=judge)
    report = await deps.claims.check(claim_draft(node, state, deps))
    judge = judge.evolve(phase="done", mismatches=[*judge.mismatches, *report.reasons()])
    if report.note and not judge.note:
        judge = judge.evolve(note=f"{report.note}; judged without it")
    usage = shared.add_usage(state.usage, report.usage, node)
    return state.evolve(judge=judge, usage=usage)


def _looked_up(state: RunState, fact_check: bool = True) -> tuple[list[str], list[str]]:
    """(evidence, computed): what the draft may rest on. The evidence, the re-query's and
    what the researcher's and the fact-check's tools looked up; what the researcher's
    calculator computed, and (with ``fact_check``) what the fact-check's computed."""
    evidence = [e.text for e in (*state.evidence, *state.judge.recheck)]
    computed: list[str] = []
    for m in state.messages:
        if m.role == "tool":
            (computed if m.name in ("calculator", None) else evidence).append(m.content)
    for m in state.judge.messages:
        if m.role == "tool" and m.name in ("calculator", None):
            if fact_check:
                computed.append(m.content)
        elif m.role == "tool":
            evidence.append(m.content)
    return evidence, computed


def _same(expression: str) -> str:
    return "".join(expression.split())


def from_question(state: RunState, today: dt.date) -> list[Recompute]:
    """The fact-check's recomputations of what the question asks for (its arithmetic, a
    duration it asks for, a question about now), not those the model or the draft named.

    A recomputation the model planned is the model's reading of the question ("the sum",
    for an average); it refutes a figure, but its match establishes nothing.
    """
    evidence, _ = _looked_up(state, fact_check=False)
    asked = {_same(e) for e in spelled_checks.asked_for(state.question, evidence, today)}
    return [
        c
        for c in state.judge.checks
        if c.tool == "current_time" or _same(str(c.arguments.get("expression", ""))) in asked
    ]


def established(state: RunState, today: dt.date) -> list[str]:
    """What the fact-check's tools established about the draft: the recomputations of
    what the question asks for, one line each, when every recomputation of the draft's
    figures ran and matched (`agents.checks.recompute.confirmed`); empty otherwise."""
    judge = state.judge
    if not recompute.confirmed(judge.checks, judge.messages, state.draft or ""):
        return []
    asked = from_question(state, today)
    return recompute.confirmed(asked, judge.messages, state.draft or "")


def not_established(state: RunState, today: dt.date) -> str:
    """Why :func:`established` is empty, in the words a user reads after ``verified``."""
    judge = state.judge
    if not from_question(state, today):
        return "no tool recomputed what the question asks for"
    held_back = recompute.first_unconfirmed(judge.checks, judge.messages, state.draft or "")
    if held_back is not None:
        named = textwrap.shorten(held_back, 120, placeholder="…")
        return f"a check of the draft did not hold ({named})"
    return "the recomputation of what the question asks for is not what the draft states"


def flag_unfounded(
    node: str, state: RunState, deps: AgentDeps, draft_says: str, evidence_says: str
) -> str | None:
    """Why the judge model's own request for changes is no refutation (None: it stands):
    the fact-check's tools established the draft, or it quotes no evidence that states
    otherwise (`agents.checks.flag_evidence`)."""
    if established(state, deps.clock().date()):
        return (
            "the fact-check's tools recomputed what the question asks for, and the draft states it"
        )
    return flag_evidence.unfounded(claim_draft(node, state, deps), draft_says, evidence_says)


def claim_draft(node: str, state: RunState, deps: AgentDeps) -> ClaimDraft:
    """What the claim check (`agents.understanding.claims`) reads of the draft: the evidence,
    and what the draft may rest on besides it.

    That includes the fact-check's recomputations of what the question asks for, never
    those the model planned: a check's own output is no source for the figure it checks
    (a model "recomputing" the sum of a list made a sum given as an average look computed).
    """
    today = deps.clock().date()
    evidence, computed = _looked_up(state, fact_check=False)
    asked = {c.call_id for c in from_question(state, today)}
    computed += [
        m.content for m in state.judge.messages if m.role == "tool" and m.tool_call_id in asked
    ]
    computed += [today.isoformat(), str(today.year)]
    # Graph passages are document chunks too (with the facts that led to them).
    kinds = ("documents", "graph")
    read = any(e.source_kind in kinds for e in (*state.evidence, *state.judge.recheck))
    read |= any(
        m.role == "tool" and m.name in ("search_docs", "query_graph") for m in state.messages
    )
    return ClaimDraft(
        question=state.question,
        draft=state.draft or "",
        evidence=evidence,
        computed=computed,
        read_documents=read,
        model=state.settings.agent_models.get(node) or state.settings.model,
    )


async def _tool_pass(
    node: str, command: Command, state: RunState, deps: AgentDeps
) -> StepResult | RunState:
    judge = state.judge
    # Exactly the researcher's tools: a fact-check must not reach what the tenant scoped out.
    tools = shared.scoped_tools(await tenant_tools(deps, command.tenant_id), state.settings)
    if not tools:
        return state
    if judge.checks:  # the recompute's results are in: compare, and the pass is done
        evidence, _ = _looked_up(state, fact_check=False)
        ordered = spelled_checks.asked_for(state.question, evidence, deps.clock().date())
        findings, mismatches = recompute.compare(
            judge.checks, judge.messages, state.draft or "", ordered
        )
        return state.with_judge(findings=findings, mismatches=mismatches)
    if judge.hops == 0:
        moved = await _recompute(node, command, state, tools, deps)
        if moved is not None:
            return moved
    system = prompts.dated(prompts.VERIFY_TOOLS, deps.clock())
    thread = judge.messages or model_input.review_messages(system, state)
    offered = tools if judge.hops < VERIFIER_TOOL_HOPS else []
    text: list[str] = []
    calls: list[ToolCall] = []
    options = shared.llm_options(state.settings, node, max_tokens=400)
    try:
        async for event in deps.llm.stream(thread, offered, options):
            if isinstance(event, TextDelta):
                text.append(event.text)
            elif isinstance(event, ToolCall):
                calls.append(event)
    except LLMError as e:
        # Fail open, like the re-query: the judge goes on without the tool pass, and says so.
        note = f"the fact-check's tool pass failed ({e.code}); judged without it"
        return state.evolve(judge=judge.evolve(note=note))
    if calls and offered:
        calls = shared.own_calls(calls, f"j{command.step}")
        assistant = ChatMessage.assistant("".join(text), calls)
        asking = judge.evolve(messages=[*thread, assistant])
        batch = ToolCallBatch(
            agent=node,
            purpose="fact_check",
            calls=shared.requests(calls),
            state=state.evolve(judge=asking),
        )
        to = graph.next_role(state.settings, node, "fact_check")
        return StepResult(next=[command.follow(to, batch)])
    findings = "".join(text).strip()
    return state.evolve(judge=judge.evolve(findings=findings))


async def _recompute(
    node: str,
    command: Command,
    state: RunState,
    tools: list[ToolDefinition],
    deps: AgentDeps,
) -> StepResult | RunState | None:
    """Send the draft's figures to be recomputed: the step to publish, the state with a
    ``note`` when the model failed and nothing else was to be checked (fail open), or None
    when there is nothing to recompute (the free tool pass follows).

    The calculator recomputes the figures the model names and those the question or the
    draft spell out (`agents.checks.spelled_checks`); current_time answers a question about now.
    """
    offered = {t.name for t in tools}
    today = deps.clock().date()
    evidence, _ = _looked_up(state)
    request = model_input.review_messages(prompts.dated(prompts.RECOMPUTE, deps.clock()), state)
    wanted: list[Recompute] = []
    usage: Usage | None = None
    note = ""
    if "calculator" in offered and recompute.states_figure(state.draft or ""):
        planned, usage, note = await _planned(node, state, request, evidence, deps)
        spelled = spelled_checks.spelled(state.question, evidence, state.draft or "", today)
        asked = spelled_checks.durations(state.question, evidence, today)
        wanted = _merged(planned, spelled, spelled_checks.backwards(asked))
    clock = spelled_checks.clock_question(state.question)
    if "current_time" in offered and clock is not None:
        asks, arguments = clock
        wanted.append(Recompute(call_id="-", tool="current_time", arguments=arguments, asks=asks))
    checks = [
        c.model_copy(update={"call_id": f"j{command.step}r{i}"}) for i, c in enumerate(wanted)
    ]
    if not checks:
        if note:
            return state.with_judge(note=note)
        return None
    calls = [ToolCall(id=c.call_id, name=c.tool, arguments=c.arguments) for c in checks]
    asking = state.judge.evolve(
        messages=[*request, ChatMessage.assistant("", calls)], checks=checks, note=note
    )
    batch = ToolCallBatch(
        agent=node,
        purpose="fact_check",
        calls=shared.requests(calls),
        state=state.evolve(judge=asking, usage=shared.add_usage(state.usage, usage, node)),
    )
    to = graph.next_role(state.settings, node, "fact_check")
    return StepResult(next=[command.follow(to, batch)])


async def _planned(
    node: str,
    state: RunState,
    request: list[ChatMessage],
    evidence: list[str],
    deps: AgentDeps,
) -> tuple[list[Recompute], Usage | None, str]:
    """The model's recompute plan: (checks, usage, note); a model error is a note."""
    options = shared.llm_options(
        state.settings, node, response_schema=recompute.PLAN_SCHEMA, max_tokens=200, temperature=0
    )
    text: list[str] = []
    usage: Usage | None = None
    try:
        async for event in deps.llm.stream(request, (), options):
            if isinstance(event, TextDelta):
                text.append(event.text)
            elif isinstance(event, Usage):
                usage = event
    except LLMError as e:
        return [], usage, f"the fact-check's recompute failed ({e.code}); judged without it"
    # Where a recomputation's figures may come from: the question, the evidence, today, and
    # what the researcher's tools looked up (a document's figure found by search_docs), but
    # not what its calculator computed: that is the draft's arithmetic, the thing checked.
    sources = " ".join([state.question, deps.clock().date().isoformat(), *evidence])
    planned = recompute.plan_calls("".join(text), "j", sources, state.draft or "")
    return planned, usage, ""


def _merged(planned: list[Recompute], spelled: list[str], wrong_way: set[str]) -> list[Recompute]:
    """The model's checks, then the spelled-out ones it did not name (ids given later).

    A check the model wrote the other way round from a duration the question asks for
    (``2026-03-10 - 2026-12-25``) is dropped: its negative or wrapped-around result would
    send a right draft back with a wrong figure to answer with.
    """
    kept = [c for c in planned if _same(str(c.arguments.get("expression", ""))) not in wrong_way]
    seen = {_same(str(c.arguments.get("expression", ""))) for c in kept}
    extra = [
        Recompute(call_id="-", tool="calculator", arguments={"expression": e})
        for e in spelled
        if _same(e) not in seen
    ]
    return [*kept, *extra]
