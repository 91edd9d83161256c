"""agentbus as an MCP server: the tools assistants and IDEs call (``api.http.routes.mcp``).

Built with the official ``mcp`` package's `MCPServer`, so argument schemas, validation and
the protocol's error shapes are the SDK's own. Every tool acts as the caller whose API key
the endpoint checked, through the same application layer as REST:

* ``ask`` starts a run with the `RunStarter` (owner, groups, rate limit, quota, budgets,
  audit), reports the run's events as MCP progress notifications while it streams (the run
  id, the plan, each tool call and result, the judges' verdicts, the answer in chunks) and
  returns the checked answer with its citations and what the judges concluded (``verified``).
* A run that pauses at a gate ends the call with an error result that says why and how to
  go on: call ``resume`` with the run id and a decision. ``resume`` decides the gate as
  ``POST /api/v1/runs/{id}/resume`` does (the run's owner only) and follows the run on.
* ``search_docs`` searches the caller's documents under their tenant and ACL groups
  (`api.app.doc_search`).

A refusal (a bad argument, a foreign conversation, a rate limit, a run that failed) is an
``isError`` result whose text starts with the API's error code; an unknown tool or a
malformed request is a JSON-RPC error. A call the client cancels or abandons (its response
stream closed) cancels its run, as on the OpenAI endpoint.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Annotated, Any, Literal

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, Field

from agentbus_contracts.events import (
    ApprovalRequest,
    Citation,
    ClientEvent,
    Done,
    ErrorEvent,
)
from agentbus_contracts.ids import RUN_ID_PATTERN, TEAM_NAME_PATTERN
from agentbus_contracts.questions import Multitask, QuestionSettings
from api.app import metrics
from api.app.ask import Ask
from api.app.auth import Principal
from api.app.doc_search import MAX_QUERY_CHARS, MAX_TOP_K
from api.app.errors import ApiError
from api.http.a2a_tasks import pause_note
from api.http.openai_dialect import AnswerStream

if TYPE_CHECKING:
    from api.http.mcp_uses import McpUses

#: Where the endpoint leaves the authenticated caller in the request's ASGI state.
PRINCIPAL_STATE = "agentbus_principal"

INSTRUCTIONS = (
    "agentbus answers questions with a team of agents (planner, researcher, critic, "
    "verifier) and tools behind one gateway, from the caller's documents with checked "
    "citations. Use ask for a question, search_docs to look passages up yourself."
)


class Cited(BaseModel):
    """One citation the answer keeps (its ``[ref]`` in the text)."""

    ref: int
    source: str
    title: str = ""
    snippet: str = ""


class Answer(BaseModel):
    """What ``ask`` and ``resume`` return: the checked answer of a run that finished."""

    run_id: str
    conversation_id: str | None = Field(description="Pass it to ask to follow up.")
    answer: str
    citations: list[Cited] = Field(description="The sources the answer cites as [ref].")
    verified: bool | None = Field(
        description="What a check established: true (a recompute matched, or a judge of "
        "measured precision approved), false (not), or null (unknown, or not judged)."
    )
    verified_reason: str | None = None


class Chunk(BaseModel):
    """One passage found by ``search_docs``."""

    ref: int
    id: str
    source: str
    title: str
    heading: str = ""
    text: str


class Found(BaseModel):
    """What ``search_docs`` returns, best first."""

    query: str
    results: list[Chunk]


class RunProgress:
    """One tool call's view of a run: progress messages per event, citations, the error."""

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        self.citations: list[Citation] = []
        self.error: ErrorEvent | None = None
        self._answer = AnswerStream()

    def messages(self, event: ClientEvent) -> list[str]:
        """What to report for one event (nothing for most token-free bookkeeping)."""
        match event.type:
            case "run_started":
                self._answer.deltas(event)  # single mode streams the answer as it comes
                return [f"run {self.run_id} started ({event.mode} mode)"]
            case "citations":
                self.citations = list(event.items)
                return [f"{len(event.items)} sources cited"]
            case "error":
                self.error = event
                return [f"error {event.code}: {event.message}"]
            case _:
                deltas = self._answer.deltas(event)
                return [d.get("content") or d.get("reasoning_content", "") for d in deltas]


class Reporter:
    """Sends a call's progress notifications (none if the client asked for none)."""

    def __init__(self, ctx: Context) -> None:
        self._ctx = ctx
        self._sent = 0

    async def say(self, message: str) -> None:
        """One notification; its progress count only grows."""
        if message:
            self._sent += 1
            await self._ctx.report_progress(self._sent, None, message)


def caller_of(ctx: Context) -> Principal:
    """The caller the endpoint authenticated for this request."""
    request: Any = ctx.request_context.request
    state: Any = getattr(request, "scope", {}).get("state") or {}
    who = state.get(PRINCIPAL_STATE)
    if not isinstance(who, Principal):  # only reachable if the endpoint is bypassed
        raise ToolError("unauthorized: send an agentbus API key as the bearer token")
    return who


def refusal(error: ApiError) -> ToolError:
    """The tool error for one of the API's errors: its code first, then what to do."""
    hint = f" ({error.hint})" if error.hint else ""
    return ToolError(f"{error.code}: {error.message}{hint}")


def gate_message(event: ApprovalRequest) -> str:
    """Why the run paused and how to go on: the ``resume`` tool with a decision."""
    detail = pause_note(event.reason).replace(": reply", "; decide with")
    if event.reason == "approve_answer" and event.answer:
        detail += f"\nThe answer waiting for approval:\n{event.answer}"
    elif event.blocked_host:
        detail += f"\nThe run's {event.tool or 'tool'} call wants to reach {event.blocked_host}."
    return (
        f"suspended: the run {event.run_id} paused at a gate ({event.reason}). {detail}\n"
        f'Call the resume tool with run_id "{event.run_id}" and your decision.'
    )


def answer_text(answer: Answer) -> str:
    """The answer as an assistant reads it: the text, then the sources it cites."""
    lines = [answer.answer]
    if answer.citations:
        lines += ["", "Sources:"]
        lines += [f"[{c.ref}] {c.title or c.source} ({c.source})" for c in answer.citations]
    if answer.verified is False:
        lines += ["", f"Not verified: {answer.verified_reason or 'the judges did not approve it'}"]
    elif answer.verified is None and answer.verified_reason:
        # Unknown is said as unknown: an answer nothing established must not read as checked.
        lines += ["", f"Verification unknown: {answer.verified_reason}"]
    return "\n".join(lines)


async def follow(
    deps: McpUses,
    run_id: str,
    conversation_id: str | None,
    reporter: Reporter,
    *,
    before: list[tuple[str, ClientEvent]] | None = None,
) -> CallToolResult:
    """Report the run's events until it ends (the answer) or pauses (an error result)."""
    progress = RunProgress(run_id)
    for _, event in before or []:  # events the caller was shown before: state only
        progress.messages(event)
    after = before[-1][0] if before else "0-0"
    end: ApprovalRequest | Done | None = None
    try:
        async with contextlib.aclosing(deps.follower.follow(run_id, after=after)) as feed:
            async for event in feed:
                if isinstance(event, ApprovalRequest | Done):
                    end = event
                    break
                for message in progress.messages(event) if event is not None else ():
                    await reporter.say(message)
    finally:
        if end is None:  # the client cancelled the call or went away: stop the run
            with anyio.CancelScope(shield=True):
                await deps.cancel(run_id)
    if end is None:
        raise ToolError(f"unavailable: the events of run {run_id} ended before the run did")
    if isinstance(end, ApprovalRequest):
        raise ToolError(gate_message(end))
    return finished(progress, end, conversation_id)


def finished(progress: RunProgress, done: Done, conversation_id: str | None) -> CallToolResult:
    """The result for a run's ``done`` event: the answer, or an error result saying why not."""
    if done.status != "done" or done.answer is None:
        why = f": {progress.error.message}" if progress.error else ""
        code = progress.error.code if progress.error else f"run_{done.status}"
        raise ToolError(f"{code}: the run {progress.run_id} ended {done.status}{why}")
    answer = Answer(
        run_id=progress.run_id,
        conversation_id=conversation_id,
        answer=done.answer,
        citations=[
            Cited(**c.model_dump(include={"ref", "source", "title", "snippet"}))
            for c in progress.citations
        ],
        verified=done.verified,
        verified_reason=done.verified_reason,
    )
    return CallToolResult(
        content=[TextContent(type="text", text=answer_text(answer))],
        structured_content=answer.model_dump(mode="json"),
    )


def build_server(deps: McpUses, version: str) -> MCPServer:
    """The MCP server whose tools act for the caller of each request."""
    server = MCPServer("agentbus", version=version, instructions=INSTRUCTIONS, log_level="WARNING")
    search = deps.doc_search

    @server.tool(annotations=ToolAnnotations(read_only_hint=False, open_world_hint=True))
    async def ask(
        question: Annotated[str, Field(min_length=1, description="The question.")],
        ctx: Context,
        mode: Annotated[
            Literal["single", "multi"] | None,
            Field(description="single: one agent with tools; multi: planned and judged."),
        ] = None,
        accuracy: Annotated[
            Literal["standard", "accurate"] | None,
            Field(description="multi: accurate adds a verifier that recomputes figures."),
        ] = None,
        conversation_id: Annotated[
            str | None,
            Field(pattern=RUN_ID_PATTERN, description="Continue this conversation (yours)."),
        ] = None,
        multitask: Annotated[
            Multitask | None,
            Field(
                description="If the conversation is still answering: enqueue (wait), reject, "
                "interrupt (keep its partial answer) or rollback (drop it)."
            ),
        ] = None,
        team: Annotated[
            str | None,
            Field(
                pattern=TEAM_NAME_PATTERN,
                description="Run this team of your tenant's (its agents, as it is now).",
            ),
        ] = None,
    ) -> Annotated[CallToolResult, Answer]:
        """Ask agentbus a question: its agents answer with tools and your documents, and the
        answer comes back checked, with its citations. Progress notifications show the
        steps as the run streams."""
        who = caller_of(ctx)
        chosen = {"mode": mode, "accuracy": accuracy, "multitask": multitask, "team": team}
        settings = QuestionSettings.model_validate({k: v for k, v in chosen.items() if v})
        try:
            started = await deps.starter.start(who, Ask(question, conversation_id, settings))
        except ApiError as e:
            metrics.REJECTED.labels(e.code).inc()
            raise refusal(e) from e
        metrics.RUNS_STARTED.labels("mcp").inc()
        reporter = Reporter(ctx)
        if started.queued:
            await reporter.say(f"run {started.run_id} waits for {started.ahead} run(s) before it")
        return await follow(deps, started.run_id, started.conversation_id, reporter)

    @server.tool(annotations=ToolAnnotations(read_only_hint=False, open_world_hint=True))
    async def resume(
        run_id: Annotated[str, Field(pattern=RUN_ID_PATTERN, description="The paused run.")],
        decision: Annotated[
            Literal["approve", "reject", "egress_allow_once", "egress_allow_always", "egress_deny"],
            Field(description="approve/reject an answer; egress_* for a host a tool wants."),
        ],
        ctx: Context,
    ) -> Annotated[CallToolResult, Answer]:
        """Decide a run that paused at a gate (yours only), then follow it to its answer."""
        who = caller_of(ctx)
        try:
            ref = await deps.access.visible(who, run_id, read=None)
            if ref.record is None or ref.record.status.value != "suspended":
                raise ToolError(f"not_suspended: the run {run_id} is not waiting for a decision")
            # The run is paused: nothing is added to its events until the decision below.
            before = await deps.follower.history(run_id)
            await deps.gates.decide(who, run_id, decision)
        except ApiError as e:
            raise refusal(e) from e
        return await follow(deps, run_id, ref.record.conversation_id, Reporter(ctx), before=before)

    @server.tool(annotations=ToolAnnotations(read_only_hint=True, open_world_hint=False))
    async def search_docs(
        query: Annotated[
            str, Field(min_length=1, max_length=MAX_QUERY_CHARS, description="What to find.")
        ],
        ctx: Context,
        top_k: Annotated[int, Field(ge=1, le=MAX_TOP_K, description="How many passages.")] = 5,
    ) -> Found:
        """Search your documents (hybrid keyword and semantic search, under your tenant and
        groups): the best passages with their source and title."""
        who = caller_of(ctx)
        try:
            results = await search.search(who, query, top_k)
        except ApiError as e:
            raise refusal(e) from e
        return Found(query=query, results=[Chunk.model_validate(r) for r in results])

    return server
