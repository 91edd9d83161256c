"""The run's working state: settings, the researcher's thread, reviews, evidence, the fact-check.

It travels from role to role inside every command (`bus.commands.AgentTask` and the other
payloads), so workers keep nothing between messages. Every part is a frozen model: a wrong
field fails when a command is decoded, and the type checker sees every access.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal, Self, TypedDict, Unpack

from pydantic import Field, model_validator

# The verdicts are part of the events clients read, so they are declared with them.
from agentbus_contracts.events import CritiqueVerdict as CritiqueVerdict
from agentbus_contracts.events import VerifierVerdict as VerifierVerdict

# The request side of the wire (a tool's name, what a question may choose) is declared with
# its models, so a transport checks a question without importing the bus.
from agentbus_contracts.ids import TOOL_NAME_PATTERN as TOOL_NAME_PATTERN
from agentbus_contracts.questions import MAX_BUDGET_TOKENS as MAX_BUDGET_TOKENS
from agentbus_contracts.questions import MAX_BUDGET_USD as MAX_BUDGET_USD
from agentbus_contracts.questions import MAX_TOOL_HOPS as MAX_TOOL_HOPS
from agentbus_contracts.questions import Multitask as Multitask
from agentbus_contracts.questions import QuestionSettings as QuestionSettings
from bus.frozen import Frozen, replaced
from bus.team_run import PinnedTeam, TeamProgress

#: The run state's version, in commands (``Command.schema_version``, which changes with it)
#: and in checkpoints (``state_version``); `bus.readers.RUN_STATE` upcasts older ones.
RUN_STATE_VERSION = 2

Priority = Literal["interactive", "batch"]
"""Where a run queues among its tenant's work: interactive runs (chat, REST) are admitted
ahead of batch ones (``runs.questions``) by the fair share (`bus.fairshare`)."""


#: The run's model cost in millionths of a US dollar, kept in `RunState.usage` with its
#: token counts (whole numbers add up exactly).
COST_KEY = "cost_micro_usd"


def usage_cost(usage: Mapping[str, int] | None) -> float | None:
    """The cost in US dollars a usage map records (None without a price table)."""
    micro = (usage or {}).get(COST_KEY)
    return None if micro is None else micro / 1_000_000


class ToolCall(Frozen):
    """A tool call the model asked for: the id its result must echo, the tool and its arguments."""

    id: str = Field(min_length=1)
    name: str = Field(min_length=1)
    arguments: dict[str, Any] = {}


class ChatMessage(Frozen):
    """One message of a conversation, in the roles every chat model understands.

    ``tool_calls`` appear only on assistant messages; a tool message carries the
    ``tool_call_id`` and tool ``name`` it answers, and its content is data, never instructions.
    """

    role: Literal["system", "user", "assistant", "tool"]
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None

    @model_validator(mode="after")
    def _check_role_fields(self) -> Self:
        if self.tool_calls and self.role != "assistant":
            raise ValueError("only assistant messages carry tool_calls")
        if self.role == "tool" and not (self.tool_call_id and self.name):
            raise ValueError("a tool message needs tool_call_id and name")
        if self.role != "tool" and (self.tool_call_id or self.name):
            raise ValueError("tool_call_id and name belong to tool messages")
        return self

    @classmethod
    def system(cls, content: str) -> ChatMessage:
        """A system message (one per prompt: messages are frozen, so every step that says
        the same prompt shares it instead of validating it again)."""
        found = _SYSTEM_MESSAGES.get(content)
        if found is None:
            if len(_SYSTEM_MESSAGES) >= _SYSTEM_MESSAGES_KEPT:
                _SYSTEM_MESSAGES.clear()
            found = _SYSTEM_MESSAGES[content] = cls(role="system", content=content)
        return found

    @classmethod
    def user(cls, content: str) -> ChatMessage:
        """A user message."""
        return cls(role="user", content=content)

    @classmethod
    def assistant(cls, content: str = "", tool_calls: Sequence[ToolCall] = ()) -> ChatMessage:
        """An assistant message, optionally with the tool calls it made."""
        return cls(role="assistant", content=content, tool_calls=tuple(tool_calls))

    @classmethod
    def tool(cls, call: ToolCall, content: str) -> ChatMessage:
        """The result of ``call``, to send back to the model."""
        return cls(role="tool", content=content, tool_call_id=call.id, name=call.name)


_SYSTEM_MESSAGES: dict[str, ChatMessage] = {}
_SYSTEM_MESSAGES_KEPT = 256


class ClientTool(Frozen):
    """A tool the client declared for its run (OpenAI ``tools``, AG-UI ``RunAgentInput.tools``):
    offered to the researcher beside the gateway's own; a call of one pauses the run until
    the client sends the call's result (`agents.gates`)."""

    name: str = Field(pattern=TOOL_NAME_PATTERN)
    description: str = Field(default="", max_length=4_000)
    parameters: dict[str, Any] = Field(
        default_factory=lambda: {"type": "object", "properties": {}},
        description="JSON Schema (an object schema) of the call's arguments.",
    )


MAX_CLIENT_TOOLS = 64
"""The most tools a client may declare for one run."""


class Review(Frozen):
    """A judge's review of the draft: who, the verdict, and why (a critique or a verdict)."""

    agent: str = Field(pattern=r"^[a-z_]{1,32}$")
    verdict: CritiqueVerdict | VerifierVerdict
    reason: str = ""


class EvidenceItem(Frozen):
    """One chunk of the merged evidence, cited as ``[ref]``."""

    ref: int = Field(ge=1)
    source_kind: str = Field(description="The retrieval source it came from (documents, web...).")
    id: str = ""
    source: str = Field(default="", description="Where it came from: a path, URL or conversation.")
    title: str = ""
    heading: str = ""
    text: str = ""


class Recompute(Frozen):
    """One figure of the draft the fact-check re-derives with a tool (`agents.checks.recompute`)."""

    call_id: str = Field(min_length=1)
    tool: str = Field(pattern=TOOL_NAME_PATTERN)
    arguments: dict[str, Any] = {}
    claim: str = Field(default="", max_length=200, description="The figure as the draft says it.")
    asks: Literal["date", "time", "weekday", "year", "month"] | None = Field(
        default=None, description="For current_time: which part of its result the draft states."
    )


class JudgeProgress(Frozen):
    """The last judge's fact-check so far: a re-query of the sources, then a verify-only tool pass.

    Attributes:
        phase: ``recheck`` while the sources are queried again, ``tools`` during the tool
            pass, ``done`` when the findings are in (None: not started).
        messages: the tool pass's own thread (the researcher's is never touched).
        hops: gateway round trips the tool pass made.
        findings: the tool pass's summary, shown to the judge.
        recheck: what the re-query found, shown to the judge next to the evidence.
        note: why a part of the fact-check was skipped (added to the judge's reasons).
        checks: the draft's figures sent to be recomputed with tools (the recompute pass).
        mismatches: figures the tools recomputed differently, with the recomputed value;
            the judge's verdict becomes a revision with these as its reasons.
    """

    phase: Literal["recheck", "tools", "done"] | None = None
    messages: list[ChatMessage] = []
    hops: int = Field(default=0, ge=0)
    findings: str = ""
    recheck: list[EvidenceItem] = []
    note: str = ""
    checks: list[Recompute] = []
    mismatches: list[str] = []

    def evolve(self, **change: Unpack[JudgeChange]) -> JudgeProgress:
        """This progress with ``change`` applied (the type checker checks every name and type)."""
        return replaced(self, change)


class JudgeChange(TypedDict, total=False):
    """The fields of `JudgeProgress` a step may change."""

    phase: Literal["recheck", "tools", "done"] | None
    messages: list[ChatMessage]
    hops: int
    findings: str
    recheck: list[EvidenceItem]
    note: str
    checks: list[Recompute]
    mismatches: list[str]


class DraftCitations(Frozen):
    """What the citation check kept and stripped in the current draft as it streamed.

    The researcher checks its answer's markers token by token against the numbers the run
    has shown (`retrieval.citations.CitationCheck`), so what clients receive is the checked
    text; the finalizer keeps that text as it is and reports these numbers.
    """

    refs: list[int] = Field(default=[], description="Kept citation numbers, in order of use.")
    stripped: int = Field(default=0, ge=0, description="Numbers stripped, each time counted.")

    def plus(self, refs: Sequence[int], stripped: int) -> DraftCitations:
        """These with one more turn's kept numbers and stripped count added."""
        more = [n for n in refs if n not in self.refs]
        return DraftCitations(refs=[*self.refs, *more], stripped=self.stripped + stripped)


class Budgets(Frozen):
    """The spending limits a run's model calls are checked against (None: no limit).

    The run's own limits come from its question, bounded by the tenant's; the user's day
    and the tenant's month are the tenant's (`agents.budget` enforces all of them).
    """

    run_tokens: int | None = Field(default=None, ge=1, le=MAX_BUDGET_TOKENS)
    run_cost_usd: float | None = Field(default=None, gt=0, le=MAX_BUDGET_USD)
    user_day_tokens: int | None = Field(default=None, ge=1, le=MAX_BUDGET_TOKENS)
    user_day_cost_usd: float | None = Field(default=None, gt=0, le=MAX_BUDGET_USD)
    tenant_month_tokens: int | None = Field(default=None, ge=1, le=MAX_BUDGET_TOKENS)
    tenant_month_cost_usd: float | None = Field(default=None, gt=0, le=MAX_BUDGET_USD)

    def limited(self) -> bool:
        """True when any limit is set (a run without one is never metered)."""
        # Every field is a limit; its values read directly (every step asks).
        return any(value is not None for value in self.__dict__.values())


def _is_true(value: object) -> bool:
    return value is True


def _is_none(value: object) -> bool:
    return value is None


def _is_false(value: object) -> bool:
    return value is False


class RunSettings(Frozen):
    """The settings snapshot a run was started with (tenant overlay applied)."""

    mode: Literal["single", "multi", "custom"] = "single"
    accuracy: Literal["standard", "accurate"] = "standard"
    think: bool = False
    use_tools: bool = True
    approve_high_risk: bool = False
    max_tool_hops: int = Field(default=8, ge=0, le=64)
    human_gate: bool = False
    model: str | None = Field(
        default=None, description="The run's chat model (None: the deployment's default)."
    )
    agent_models: dict[str, str] = Field(
        default={}, description="Per-agent model overrides (e.g. a small model for the critic)."
    )
    timeout_s: float | None = Field(
        default=None, gt=0, description="The run's whole-turn timeout (a resume keeps it)."
    )
    verifier_check: bool = Field(
        default=True, description="The last judge fact-checks the answer (re-query + tools)."
    )
    sources: list[str] = Field(
        default=[],
        description="Retrieval sources: those the planner may choose from (multi mode), the "
        "context searched before the first model call (single mode).",
    )
    agent_prompts: dict[str, str] = Field(
        default={}, description="Per-agent system prompt overrides (empty = default)."
    )
    researcher_tools: list[str] | None = Field(
        default=None,
        description="Tools the models may call in multi/custom, the researcher's and the "
        "fact-check's (None = all).",
    )
    approve_critical: list[Annotated[str, Field(pattern=TOOL_NAME_PATTERN)]] = Field(
        default=[],
        max_length=32,
        description="CRITICAL tools this run asks to use, by name; each must also be "
        "approved by the tenant's admin (approved_critical_tools in the settings).",
    )
    budgets: Budgets = Field(
        default=Budgets(), description="The run's, its user's and its tenant's spending limits."
    )
    memory: bool = Field(
        default=True,
        # New in 0.3.0, and 0.2.0's readers refuse a field they do not know: written only
        # when off, so a rolling upgrade from 0.2.0 never hands one a run it would refuse
        # (docs/upgrades.md).
        exclude_if=_is_true,
        description="Long-term memory: the user's memories are retrieved, and what the "
        "question says about the user is remembered when the run is done.",
    )
    priority: Priority = Field(
        default="interactive",
        description="Interactive runs (chat, REST) are admitted ahead of batch ones "
        "(runs.questions) when a tenant's work queues.",
    )
    answer_schema: dict[str, Any] | None = Field(
        default=None,
        # Written only when set, as memory is: a reader of an older release never sees it.
        exclude_if=_is_none,
        description="The answer is a JSON document valid against this JSON Schema (the "
        "OpenAI endpoint's response_format): the researcher asks the model for it and "
        "leaves its text as the model wrote it (no citation markers checked or added).",
    )
    client_tools: list[ClientTool] | None = Field(
        default=None,
        max_length=MAX_CLIENT_TOOLS,
        # Written only when set, as answer_schema is.
        exclude_if=_is_none,
        description="Tools the client declared and runs itself: the researcher is offered "
        "them, and a call of one pauses the run until the client sends its result.",
    )

    client_tool_required: bool = Field(
        default=False,
        exclude_if=_is_false,
        description="The client asked for a tool call (OpenAI tool_choice required or a "
        "named function): the researcher's turns must call a tool.",
    )
    team: PinnedTeam | None = Field(
        default=None,
        # Written only when set, as answer_schema is.
        exclude_if=_is_none,
        description="The tenant's team the run follows (mode custom), pinned at admission: "
        "its declared agents run in the `agent` role, along the team's edges.",
    )

    def client_tool(self, name: str) -> ClientTool | None:
        """The client-declared tool called ``name``, if the run has one."""
        return next((t for t in self.client_tools or () if t.name == name), None)


class RunState(Frozen):
    """The run's working state; it travels from role to role inside the command."""

    question: str = Field(max_length=32_000)
    conversation_id: str | None = None
    parent_message_id: int | None = Field(
        default=None,
        ge=0,
        description="The message the question follows: None for the end of the "
        "conversation's active branch (intake resolves it), 0 for its start.",
    )
    interpreted: str | None = None
    settings: RunSettings = RunSettings()
    plan: list[str] = []
    messages: list[ChatMessage] = Field(default=[], description="The researcher's thread.")
    tool_hops: int = 0
    attempts: int = 0
    draft: str | None = None
    critiques: list[Review] = Field(
        default=[], description="Reviews that sent the run back, and the critic's last one."
    )
    verdicts: list[Review] = Field(default=[], description="The verifier's verdicts.")
    chosen_sources: list[str] = []
    base_len: int = Field(default=0, ge=0, description="Messages before the first attempt.")
    approved_hosts: list[str] = Field(
        default=[], description="Hosts a person allowed for this run at the egress gate."
    )
    evidence: list[EvidenceItem] = Field(
        default=[], description="The merged evidence; critic and verifier judge against it."
    )
    judge: JudgeProgress = Field(
        default=JudgeProgress(), description="The last judge's fact-check progress."
    )
    usage: dict[str, int] = {}
    started_at: float = Field(default=0.0, description="Unix time the edge published the run.")
    paused_trace: str | None = Field(
        default=None, description="The traceparent of the step that paused at a gate."
    )
    first_token_at: float = Field(
        default=0.0, description="Unix time of the run's first answer token (0: none yet)."
    )
    stop_reason: str | None = None
    draft_citations: DraftCitations | None = Field(
        default=None,
        description="The draft's checked citations (None: the draft was not checked as it "
        "streamed; the finalizer checks it then).",
    )
    next_ref: int = Field(
        default=1,
        ge=1,
        description="The next citation number free in this run: every retrieval (merged "
        "evidence, a re-query, each search_docs result) numbers its chunks from here, so "
        "a number names one chunk for the whole run.",
    )
    team_run: TeamProgress | None = Field(
        default=None,
        exclude_if=_is_none,
        description="A team run's progress among its declared agents (`RunSettings.team`).",
    )

    def evolve(self, **change: Unpack[RunStateChange]) -> RunState:
        """This state with ``change`` applied: every run-state change goes through here, so
        the type checker checks each field's name and type (``model_copy(update=...)`` takes
        any string)."""
        return replaced(self, change)

    def started(self, at: float) -> RunState:
        """This state as the edge starts it at ``at`` (a question that waited its turn)."""
        return self.model_copy(update={"started_at": at})

    def with_judge(self, **change: Unpack[JudgeChange]) -> RunState:
        """This state with the fact-check's progress changed."""
        return self.evolve(judge=self.judge.evolve(**change))

    def refs_used_to(self, end: int) -> RunState:
        """This state with citation numbers below ``end`` taken."""
        if end <= self.next_ref:
            return self
        return self.evolve(next_ref=end)


class RunStateChange(TypedDict, total=False):
    """The fields of `RunState` a step may change. The question, the conversation and the
    start time are the edge's, fixed when the run is published; the settings too."""

    interpreted: str | None
    plan: list[str]
    messages: list[ChatMessage]
    tool_hops: int
    attempts: int
    draft: str | None
    critiques: list[Review]
    verdicts: list[Review]
    chosen_sources: list[str]
    base_len: int
    approved_hosts: list[str]
    evidence: list[EvidenceItem]
    judge: JudgeProgress
    usage: dict[str, int]
    paused_trace: str | None
    first_token_at: float
    stop_reason: str | None
    draft_citations: DraftCitations | None
    next_ref: int
    parent_message_id: int | None
    team_run: TeamProgress | None
