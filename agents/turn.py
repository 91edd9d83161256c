"""One answering turn of a model, streamed and judged: the researcher's and every declared
agent's of a team (`agents.roles.team_agent`), so both answers get the same guards.

A turn streams its reasoning and its text to the run's events in small batches
(`agents.streaming.TokenBatcher`). The text's citation markers are checked as they stream
(`retrieval.citations.CitationCheck`): every number the turn may cite was shown before it
began, so what clients receive is the checked text the store keeps. A runaway repetition
stops the model while it streams (`agents.checks.answer_guard.RepeatGuard`). When the turn's text
is its answer (it called no tool it was offered), the text is judged: a tool's payload or
error echoed, the prompt's words or a runaway is no answer (`agents.checks.answer_guard`), and
`superseding` gives the words that replace it. A prose answer that cites nothing cites the
passage it restates. A JSON answer (asked under a schema) passes as the model wrote it
(`Verbatim`: a ``[1]`` in a document is data) and is judged by its schema, not the guard.
What is still buffered when the turn ends is handed back to be written with the commit.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from agents.checks import answer_guard
from agents.llm import local_prompts
from agents.llm.ports import LLM, LLMOptions, ReasoningDelta, TextDelta, ToolDefinition, Usage
from agents.streaming import Kind, TokenBatcher
from bus.commands import Command
from bus.events import Answer, ClientEvent, DraftSuperseded, Reasoning
from bus.run_state import ChatMessage, RunState, ToolCall
from bus.runtime.context import StepContext
from retrieval.attribution import attribute
from retrieval.citations import CitationCheck, RetrievedChunk, evidence_refs, retrieved_refs


class Verbatim(CitationCheck):
    """The citation check of a JSON answer: its text passes as the model wrote it."""

    def __init__(self) -> None:
        super().__init__({})

    def feed(self, text: str) -> str:
        """The piece as it came."""
        return text

    def finish(self) -> str:
        """Nothing is ever held back."""
        return ""


@dataclass(frozen=True, slots=True)
class Asked:
    """What one turn asks the model, and how its text is shown and judged.

    Attributes:
        prompt: the messages the model reads (its system prompt first).
        tools: the tools it is offered.
        options: its call options; a ``response_schema`` makes its answer a JSON document.
        thread: the agent's own thread the turn answers (its trailing TOOL messages are
            the round the answer follows).
        question: the question the run answers.
        agent: the name its events carry.
        attempt: the draft's attempt its answer tokens belong to.
        kind: what its text streams as: ``answer``, or ``reasoning`` (an object that is
            not the run's answer, such as a structured output routes read).
    """

    prompt: Sequence[ChatMessage]
    tools: Sequence[ToolDefinition]
    options: LLMOptions
    thread: Sequence[ChatMessage]
    question: str
    agent: str
    attempt: int = 0
    kind: Kind = "answer"


@dataclass(slots=True)
class Turn:
    """What one streamed turn gave.

    Attributes:
        text: its text as streamed (checked, with the source marker it was given).
        calls: the tool calls it made (none after a runaway).
        usage: its token counts, if the model reported them.
        check: the citation check its text went through (what it cited, what it stripped).
        rejection: why its answer is no answer (None: it is one, or it called tools).
        tail: its last buffered events, to be written with the step's commit.
        first_at: when its first text token came (0: none came).
        cancelled: the run was cancelled while it streamed (nothing else is set then).
    """

    text: str = ""
    calls: list[ToolCall] = field(default_factory=list[ToolCall])
    usage: Usage | None = None
    check: CitationCheck = field(default_factory=lambda: CitationCheck({}))
    rejection: answer_guard.Rejection | None = None
    tail: list[Answer | Reasoning] = field(default_factory=list[Answer | Reasoning])
    first_at: float = 0.0
    cancelled: bool = False
    calls_tools: bool = False


async def stream_turn(
    ctx: StepContext, llm: LLM, asked: Asked, check: CitationCheck | None = None
) -> Turn:
    """Stream one turn (see the module docstring); ``check``: the citation check its text
    goes through (`Verbatim` for a JSON answer, which is also the default under a schema).
    """
    schema = asked.options.response_schema
    if check is None:
        check = Verbatim() if schema is not None else CitationCheck({})
    batcher = TokenBatcher(ctx, asked.agent, attempt=asked.attempt)
    guard = answer_guard.RepeatGuard()
    text: list[str] = []
    calls: list[ToolCall] = []
    usage: Usage | None = None
    first_at = 0.0
    stream = llm.stream(list(asked.prompt), asked.tools, asked.options)
    async for event in stream:
        if isinstance(event, ReasoningDelta):
            if not batcher.buffered("reasoning", event.text):
                await batcher.add("reasoning", event.text)
        elif isinstance(event, TextDelta):
            if not first_at:
                first_at = time.time()
            shown = check.feed(event.text)
            text.append(shown)
            if not batcher.buffered(asked.kind, shown):
                await batcher.add(asked.kind, shown)
            if guard.feed(shown):  # a runaway: stop the model, not at its token cap
                await _close(stream)
                calls = []
                break
        elif isinstance(event, ToolCall):
            calls.append(event)
        else:
            usage = event
        if batcher.cancelled:
            return Turn(cancelled=True)
    rest = check.finish()
    calls_tools = bool(calls and asked.tools)
    whole = "".join(text) + rest
    rejection = None if calls_tools else _rejection(whole, asked, guard, schema)
    # A prose answer that cites nothing cites the passage it rests on.
    if not calls_tools and rejection is None and not check.citations and schema is None:
        rest += sourced(whole, asked.question, check)
    text.append(rest)
    await batcher.add(asked.kind, rest)
    return Turn(
        text="".join(text),
        calls=calls,
        usage=usage,
        check=check,
        rejection=rejection,
        tail=batcher.drain(),
        first_at=first_at,
        calls_tools=calls_tools,
    )


def sourced(answer: str, question: str, check: CitationCheck) -> str:
    """The marker to append to an answer that cites nothing but rests on a passage it was
    shown (`retrieval.attribution`), or "". Not after code: a closing fence takes no text."""
    if not answer.strip() or "```" in answer:
        return ""
    ref = attribute(answer, question, check.shown)
    if ref is None:
        return ""
    return ("" if answer[-1].isspace() else " ") + check.cite(ref)


def _rejection(
    answer: str,
    asked: Asked,
    guard: answer_guard.RepeatGuard,
    schema: dict[str, Any] | None,
) -> answer_guard.Rejection | None:
    """Why the turn's text is not an answer (`agents.checks.answer_guard`), or None. A JSON answer
    is judged by its schema (at the edge), not by whether it looks like a tool's data."""
    thread = asked.thread
    if guard.look() and guard.unit is not None:
        failure = next((o for o in answer_guard.last_round(thread) if o.failed), None)
        return answer_guard.runaway(guard.unit, failure)
    if schema is not None:
        return None
    told = [m.content for m in asked.prompt[:1] if m.role == "system"]  # the persona, not data
    said = next((m.content for m in reversed(thread) if m.role == "user"), "")
    return answer_guard.rejected(answer, thread, told, local_prompts.EXAMPLES, said)


def superseding(
    command: Command,
    state: RunState,
    rejection: answer_guard.Rejection,
    agent: str,
    attempt: int,
) -> tuple[str, list[ClientEvent]]:
    """The answer that replaces a rejected draft, and the events that show it: the draft
    superseded (clients drop the answer shown so far), then the answer."""
    check = CitationCheck(run_refs(state))  # checked like any streamed text
    answer = check.feed(rejection.replacement) + check.finish()
    run, step = command.run_id, command.step_id
    return answer, [
        DraftSuperseded(
            run_id=run, step_id=step, agent=agent, attempt=attempt, reason=rejection.reason
        ),
        Answer(run_id=run, step_id=step, agent=agent, delta=answer, attempt=attempt),
    ]


async def _close(stream: object) -> None:
    """Stop a model's stream the turn will read no further (its generation ends)."""
    close = getattr(stream, "aclose", None)
    if close is not None:
        await close()


def run_refs(state: RunState) -> dict[int, RetrievedChunk]:
    """Every citation number the run has shown the answering agent (unique in the run)."""
    return {**evidence_refs(state.evidence), **retrieved_refs(state.messages)}


def streamed_so_far(state: RunState) -> str:
    """The answer text this attempt's earlier turns streamed (text beside tool calls).

    It was shown to clients as answer text, so it stays part of the draft: what is
    stored is what was streamed.
    """
    turns = state.messages[state.base_len :]
    return "".join(m.content for m in turns if m.role == "assistant")
