"""The ``agent`` role: any declared agent of a run's team, one model turn per step.

The run carries its team (`bus.team_run.PinnedTeam`, the version current when it was
admitted) and where it is among the team's agents (`RunState.team_run`). A step runs
the agent the run is at: its instructions as the system prompt, the conversation and the
question as intake left them, what earlier agents handed over (`agents.teams.pinned.handoff`),
its model, and the tools it may call (the tenant's, cut to the agent's list). Its tool calls
go to the gateway, whose results come back here (purpose ``agent``), bounded by the team's
``max_tool_hops``. Its turn streams and is judged as the researcher's is (`agents.turn`:
citations checked as they stream, a tool's payload, the prompt's words or a runaway
superseded by words saying what failed). Its answer is free text (the run's draft, streamed
as answer tokens; a JSON document when the run asks for one) or a JSON object under its
output schema (streamed as reasoning; routes read its fields).
The answer leaves by the team's edges (`agents.teams.route`): to the next declared agent,
or to a built-in node such as the finalizer. Like every role, a step returns its effects
for one commit, so progress is exactly once and a tool runs at most once per call.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from jsonschema import Draft202012Validator, ValidationError
from jsonschema.protocols import Validator

from agents import graph, model_input, prompts
from agents.checks import answer_guard
from agents.deps import AgentDeps, tenant_tools
from agents.llm.json_reply import json_object
from agents.llm.ports import LLMOptions, ToolDefinition
from agents.state import add_usage, own_calls, requests, toward, with_results
from agents.teams.document import TeamAgent, TeamDocument
from agents.teams.nodes import FINALIZER
from agents.teams.pinned import document_of
from agents.teams.route import NoRoute, route
from agents.turn import (
    Asked,
    Turn,
    Verbatim,
    run_refs,
    stream_turn,
    streamed_so_far,
    superseding,
)
from bus.commands import AgentTask, Command, ToolCallBatch, ToolResults
from bus.events import Answer, ClientEvent, DraftSuperseded
from bus.run_state import ChatMessage, DraftCitations, EvidenceItem, RunState, ToolCall
from bus.runtime.context import StepContext, StepResult
from bus.runtime.worker import Handler
from bus.team_run import TeamProgress, TeamTurn
from gateway.tools.retrieval_tool import reads_declared
from retrieval.citations import CitationCheck, retrieved_refs

ROLE = "agent"
#: What an audit row and a tool event call the caller when its name does not fit there.
_LABEL_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz_")


def arrived(command: Command) -> tuple[RunState, str]:
    """The state a step starts from and the declared agent it runs."""
    task = command.payload
    if isinstance(task, ToolResults):
        state = task.state.evolve(
            messages=with_results(task.state.messages, task.results),
            tool_hops=task.state.tool_hops + 1,
        )
        if task.next_ref:
            state = state.refs_used_to(task.next_ref)
    elif isinstance(task, AgentTask):
        state = task.state
    else:
        raise TypeError(f"the agent role got a {task.kind} payload")
    progress = state.team_run or TeamProgress()
    node = progress.node or graph.next_node(state.settings, graph.START, "admitted")
    return state.evolve(team_run=progress.at(node)), node


def label(name: str) -> str:
    """The agent's name where events and audit rows allow it (lower-case letters and _)."""
    return name if len(name) <= 32 and set(name) <= _LABEL_CHARS else ROLE


def structured(text: str, schema: dict[str, Any]) -> dict[str, Any] | None:
    """The object an answer under ``schema`` holds, or None when it holds none."""
    return None if _problem(text, schema) else json_object(text)


def _problem(text: str, schema: dict[str, Any]) -> str | None:
    """Why ``text`` holds no object valid under ``schema`` (None: it holds one)."""
    try:
        value = json_object(text)
        if value is None:
            return "no JSON object in it"
        validator: Validator = Draft202012Validator(schema)
        validator.validate(value)  # pyright: ignore[reportUnknownMemberType]
    except ValidationError as e:
        return e.message[:200]
    except ValueError as e:
        return str(e).splitlines()[0][:200]
    return None


def _refused(turn: Turn, agent: TeamAgent) -> str | None:
    """Why the schema refused a structured agent's answer (None: it has no schema, it
    called tools, its answer was a runaway, or the schema took it)."""
    if agent.output_schema is None or turn.calls_tools or turn.rejection is not None:
        return None
    return _problem(turn.text, agent.output_schema)


async def _asked_again(
    ctx: StepContext, deps: AgentDeps, asked: Asked, turn: Turn, problem: str
) -> Turn:
    """The turn a structured agent gives when asked once more, told why its schema refused
    its reply (as the verifier's structured call is): a small model's prose around its
    object, or a field it left out, is not its route."""
    await ctx.emit(*turn.tail)
    again = [
        *asked.prompt,
        ChatMessage.assistant(turn.text),
        ChatMessage.user(prompts.SCHEMA_RETRY.format(problem=problem)),
    ]
    return await stream_turn(ctx, deps.llm, dataclasses.replace(asked, prompt=again), Verbatim())


async def _drafting(
    ctx: StepContext, command: Command, state: RunState, node: str, drafts: int
) -> RunState:
    """A free-text agent's first turn: its answer is the run's next draft, with citations
    of its own; clients drop the one they were shown (if any) when it starts."""
    if drafts:
        await ctx.emit(
            DraftSuperseded(
                run_id=command.run_id,
                step_id=command.step_id,
                agent=node,
                attempt=drafts - 1,
                reason=f"{node} answers next",
            )
        )
    return state.evolve(draft_citations=None)


def _answer_event(command: Command, node: str, delta: str, attempt: int) -> Answer:
    """An answer token event of this step."""
    return Answer(
        run_id=command.run_id, step_id=command.step_id, agent=node, delta=delta, attempt=attempt
    )


def make_team_agent(deps: AgentDeps) -> Handler:
    """The ``agent`` role's handler."""

    async def handle(ctx: StepContext, command: Command) -> StepResult:
        state, node = arrived(command)
        team = state.settings.team
        if team is None:
            raise TypeError("the agent role got a run that follows no team")
        doc = document_of(team)
        agent = doc.agent(node)
        if agent is None:
            raise TypeError(f"team {team.name} v{team.version} declares no agent {node!r}")
        progress = state.team_run or TeamProgress()
        drafts = sum(t.output is None for t in progress.turns)
        free = agent.output_schema is None
        if free and isinstance(command.payload, AgentTask):
            state = await _drafting(ctx, command, state, node, drafts)
        tools = await _tools(deps, command.tenant_id, state, agent)
        # The run's gathered evidence (a team's gather and merge) before the question.
        prompt = model_input.with_note(state, model_input.evidence_note(state))
        # Free text is the run's answer: a run that asks for a JSON answer gets one.
        schema = state.settings.answer_schema if free else agent.output_schema
        think = state.settings.think
        options = LLMOptions(
            model=agent.model or state.settings.agent_models.get(node) or state.settings.model,
            think=think,
            response_schema=schema,
            max_tokens=answer_guard.turn_tokens(think),
        )
        check = CitationCheck(run_refs(state)) if schema is None else Verbatim()
        asked = Asked(
            prompt=[ChatMessage.system(agent.instructions), *prompt[1:]],
            tools=tools,
            options=options,
            thread=state.messages,
            question=state.question,
            agent=node,
            attempt=drafts,
            kind="answer" if free else "reasoning",
        )
        turn = await stream_turn(ctx, deps.llm, asked, check)
        state = state.evolve(usage=add_usage(state.usage, turn.usage, node))
        problem = None if turn.cancelled else _refused(turn, agent)
        if problem is not None:
            turn = await _asked_again(ctx, deps, asked, turn, problem)
            state = state.evolve(usage=add_usage(state.usage, turn.usage, node))
        if turn.cancelled:
            return StepResult.ending(command, "cancelled", "cancelled while answering")
        tail: list[ClientEvent] = [*turn.tail]
        answer = turn.text
        if free and turn.rejection is None:
            tally = (state.draft_citations or DraftCitations()).plus(
                [c.ref for c in check.citations], check.stripped
            )
            state = state.evolve(draft_citations=tally)
        if turn.calls_tools:
            if state.tool_hops < state.settings.max_tool_hops:
                result = _to_gateway(command, state, answer, turn.calls, node)
                return dataclasses.replace(result, events=[*tail, *result.events])
            exhausted = ("\n\n" if answer or streamed_so_far(state) else "") + (
                prompts.TOOL_LOOP_EXHAUSTED
            )
            if free:
                tail.append(_answer_event(command, node, exhausted, drafts))
            answer += exhausted
            state = state.evolve(stop_reason="tool_loop_exhausted")
        if free:
            answer = streamed_so_far(state) + answer  # what clients were shown is the draft
        if turn.rejection is not None:
            if free:  # superseded by the words that say what failed, which alone are shown
                answer, shown = superseding(command, state, turn.rejection, node, drafts)
                tail.extend(shown)
            else:  # a runaway: no object, which only a fallback edge takes
                answer = ""
        result = _answered(command, state, doc, agent, answer)
        return dataclasses.replace(result, events=[*tail, *result.events])

    return handle


async def _tools(
    deps: AgentDeps, tenant_id: str, state: RunState, agent: TeamAgent
) -> list[ToolDefinition]:
    """The tools the agent is offered: those of its list the tenant's runs may use, less
    the retrieval tools of sources it does not declare."""
    if not agent.tools or not state.settings.use_tools:
        return []
    allowed = {t for t in agent.tools if reads_declared(t, agent.sources)}
    return [t for t in await tenant_tools(deps, tenant_id) if t.name in allowed]


def _to_gateway(
    command: Command, state: RunState, answer: str, calls: list[ToolCall], node: str
) -> StepResult:
    calls = own_calls(calls, f"s{command.step}")
    thread = [*state.messages, ChatMessage.assistant(answer, calls)]
    batch = ToolCallBatch(
        agent=label(node),
        purpose="agent",
        calls=requests(calls),
        state=state.evolve(messages=thread),
    )
    target = graph.next_role(state.settings, graph.TEAM_AGENT, "tool_calls")
    return StepResult(next=[command.follow(target, batch)])


def _answered(
    command: Command, state: RunState, doc: TeamDocument, agent: TeamAgent, answer: str
) -> StepResult:
    """The answer leaves by the team's edges: to the next declared agent (handed the
    answer so far), or to a built-in node."""
    output = None if agent.output_schema is None else structured(answer, agent.output_schema)
    if agent.output_schema is not None and output is None:
        output = {}  # a refused output matches no field: only a fallback edge takes it
    progress = state.team_run or TeamProgress()
    try:
        hop = route(doc, state.settings, agent.name, output, progress.taken)
    except NoRoute:
        return StepResult.ending(
            command, "error", f"{agent.name}'s answer matches none of its edges in the team"
        )
    progress = progress.answered(
        TeamTurn(agent=agent.name, output=output), hop.index if hop.bounded else None
    )
    state = _keep_passages(state)
    if output is None:
        state = state.evolve(draft=answer)
    elif state.draft is None:
        state = state.evolve(draft=answer)  # no free text yet: the object is the answer
    to = hop.to
    if doc.agent(to) is not None and len(progress.turns) >= doc.limits.max_agent_steps:
        to, state = FINALIZER, state.evolve(stop_reason="agent_steps_exhausted")
    state = toward(state.evolve(team_run=progress), to)
    target = graph.role_of(state.settings, to)
    return StepResult(next=[command.follow(target, AgentTask(state=state))])


def _keep_passages(state: RunState) -> RunState:
    """The state with the passages this agent's tools retrieved kept as the run's evidence:
    its thread is not handed on, but its answer may cite them, and so may the agents and
    judges after it (who read them), and the finalizer lists them."""
    known = {e.ref for e in state.evidence}
    found = retrieved_refs(state.messages[state.base_len :])
    kept = [
        EvidenceItem(
            ref=c.ref,
            source_kind=c.source_kind,
            id=c.id,
            source=c.source,
            title=c.title,
            text=c.text,
        )
        for ref, c in sorted(found.items())
        if ref not in known
    ]
    return state.evolve(evidence=[*state.evidence, *kept]) if kept else state
