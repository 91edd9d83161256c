"""Commands: the typed messages a role's stream carries, keyed by run id.

A command is an envelope (who, which run, which step, until when) around a
role-specific payload. The run's working state travels inside the payload, so
workers keep nothing between messages.
"""

from __future__ import annotations

import time
import uuid
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from bus.keys import PREFIX, Role

SCHEMA_VERSION = 1
RUN_ID_PATTERN = r"^[A-Za-z0-9_-]{1,64}$"
NAME_PATTERN = r"^[A-Za-z0-9_.@:-]{1,128}$"
#: An ACL entry: a group name, or ``*`` for every user of the tenant.
ACL_PATTERN = r"^(\*|[A-Za-z0-9_.@:-]{1,128})$"


def _outside_internal_keys(stream: str | None) -> str | None:
    # A reply stream named by a publisher must not point into agentbus's own keys.
    if stream is not None and stream.startswith(f"{PREFIX}:"):
        raise ValueError(f"reply_to must not start with {PREFIX!r}:")
    return stream


ReplyTo = Annotated[
    str | None,
    Field(default=None, pattern=r"^[A-Za-z0-9_.:{}-]{1,200}$"),
    AfterValidator(_outside_internal_keys),
]


class Frozen(BaseModel):
    """Base of every message: immutable, no unknown fields."""

    model_config = ConfigDict(frozen=True, extra="forbid")


class TraceContext(Frozen):
    """W3C trace context, so spans across hops share one trace id."""

    traceparent: str | None = None
    tracestate: str | None = None


class RunSettings(Frozen):
    """The settings snapshot a run was started with (tenant overlay applied)."""

    mode: Literal["single", "multi", "custom"] = "single"
    accuracy: Literal["standard", "accurate"] = "standard"
    think: bool = False
    use_tools: bool = True
    approve_high_risk: bool = False
    max_tool_hops: int = Field(default=8, ge=0, le=64)
    human_gate: bool = False
    model: str | None = None
    verifier_check: bool = Field(
        default=True, description="The last judge fact-checks the answer (re-query + tools)."
    )
    sources: list[str] = Field(
        default=[], description="Retrieval sources the planner may choose from (multi mode)."
    )
    agent_prompts: dict[str, str] = Field(
        default={}, description="Per-agent system prompt overrides (empty = default)."
    )
    researcher_tools: list[str] | None = Field(
        default=None, description="Tools the researcher may call in multi/custom (None = all)."
    )


class RunState(Frozen):
    """The run's working state; it travels from role to role inside the command."""

    question: str = Field(max_length=32_000)
    conversation_id: str | None = None
    interpreted: str | None = None
    settings: RunSettings = RunSettings()
    plan: list[str] = []
    messages: list[dict[str, Any]] = []
    tool_hops: int = 0
    attempts: int = 0
    draft: str | None = None
    critiques: list[dict[str, Any]] = []
    verdicts: list[dict[str, Any]] = []
    chosen_sources: list[str] = []
    base_len: int = Field(default=0, ge=0, description="Messages before the first attempt.")
    approved_hosts: list[str] = Field(
        default=[], description="Hosts a person allowed for this run at the egress gate."
    )
    evidence: list[dict[str, Any]] = Field(
        default=[], description="The merged evidence; critic and verifier judge against it."
    )
    judge: dict[str, Any] = Field(
        default={}, description="The last judge's fact-check progress (phase, findings)."
    )
    usage: dict[str, int] = {}
    stop_reason: str | None = None


class AgentTask(Frozen):
    """Work for an agent role (planner, researcher, critic, verifier, finalizer)."""

    kind: Literal["agent_task"] = "agent_task"
    state: RunState


class ToolCallRequest(Frozen):
    """One tool call the model asked for; ``call_id`` is deterministic per run and step."""

    call_id: str
    name: str
    arguments: dict[str, Any] = {}


class ToolCallBatch(Frozen):
    """Tool calls for the gateway, with the state the researcher continues from.

    ``then`` says what the gateway does with the outcomes: ``return`` them to ``agent`` as
    TOOL messages (an agent's call), or ``end`` the run after the ``tool_result`` events
    (``agentbus tools call``: a run of one batch, read back from its events).
    """

    kind: Literal["tool_calls"] = "tool_calls"
    agent: str = "researcher"
    calls: list[ToolCallRequest]
    state: RunState
    then: Literal["return", "end"] = "return"
    thread: Literal["messages", "judge"] = Field(
        default="messages",
        description="Where the TOOL messages go: the researcher's conversation, or the "
        "last judge's fact-check (state.judge['messages']).",
    )


class NoopTask(Frozen):
    """A pass-through step: forwards itself ``hops_left`` more times (benchmarks, tests)."""

    kind: Literal["noop"] = "noop"
    hops_left: int = Field(ge=0)
    sent_at: float = 0.0
    fail_times: int = Field(default=0, ge=0, description="Raise on the first N deliveries.")
    work_s: float = Field(default=0.0, ge=0, description="Simulated step duration.")
    tokens: list[str] = []


class IngestDoc(Frozen):
    """The document an ingest batch belongs to (see ``retrieval.ingest``).

    Attributes:
        doc_id: stable id of (tenant, source); re-ingesting the same source replaces it.
        source: where the document came from (a path or URL), shown in citations.
        title: the document's title.
        version: hash of the content and ACL; chunks of other versions are deleted once
            every batch of this one is stored.
        acl: groups that may read it; ``["*"]`` means every user of the tenant.
        batch: this batch's index within the document (0-based).
        batches: how many batches the document was split into.
    """

    doc_id: str = Field(pattern=r"^[A-Za-z0-9_-]{1,64}$")
    source: str = Field(min_length=1, max_length=2048)
    title: str = Field(default="", max_length=1024)
    version: str = Field(pattern=r"^[0-9a-f]{16,64}$")
    acl: list[Annotated[str, Field(pattern=ACL_PATTERN)]] = Field(min_length=1, max_length=64)
    batch: int = Field(ge=0)
    batches: int = Field(ge=1)


class IngestChunk(Frozen):
    """One chunk to embed and store."""

    position: int = Field(ge=0, description="Order of the chunk in its document.")
    heading: str = Field(default="", max_length=1024)
    text: str = Field(min_length=1, max_length=32_000)


class IngestTask(Frozen):
    """Work for the retrieval role: embed and store one batch of a document's chunks."""

    kind: Literal["ingest"] = "ingest"
    doc: IngestDoc
    chunks: list[IngestChunk] = Field(default=[], max_length=512)


class GatherTask(Frozen):
    """One branch of a gather: query one retrieval source and contribute to the join."""

    kind: Literal["gather"] = "gather"
    source: str = Field(pattern=r"^[a-z_]{1,32}$")
    query: str = Field(max_length=32_000)
    join: str = Field(pattern=r"^[A-Za-z0-9_-]{1,64}$", description="The join's name.")
    expected: int = Field(ge=1, le=16, description="Branches in this gather.")
    purpose: Literal["evidence", "recheck"] = "evidence"
    return_to: str = Field(default="researcher", description="Node after the merge.")
    state: RunState


class MergeTask(Frozen):
    """Join the gather branches: fuse their results into the run's evidence."""

    kind: Literal["merge"] = "merge"
    join: str = Field(pattern=r"^[A-Za-z0-9_-]{1,64}$")
    purpose: Literal["evidence", "recheck"] = "evidence"
    return_to: str = "researcher"
    state: RunState


AnyPayload = AgentTask | ToolCallBatch | NoopTask | IngestTask | GatherTask | MergeTask
Payload = Annotated[AnyPayload, Field(discriminator="kind")]


class Command(Frozen):
    """The envelope every role stream carries."""

    schema_version: Literal[1] = SCHEMA_VERSION
    run_id: str = Field(pattern=RUN_ID_PATTERN)
    tenant_id: str = Field(pattern=NAME_PATTERN)
    subject: str = Field(pattern=NAME_PATTERN)
    shard: int = Field(default=0, ge=0)
    role: Role
    step: int = Field(default=0, ge=0)
    attempt: int = Field(default=0, ge=0)
    branch: str | None = Field(default=None, pattern=r"^[A-Za-z0-9_-]{1,32}$")
    deadline: float = Field(description="Unix time after which the step is not started.")
    trace: TraceContext = TraceContext()
    reply_to: ReplyTo = None
    groups: tuple[Annotated[str, Field(pattern=NAME_PATTERN)], ...] = Field(
        default=(), max_length=64, description="The subject's ACL groups (retrieval filters)."
    )
    payload: Payload

    @property
    def step_id(self) -> str:
        """Deterministic id of this step: run, step number, attempt (and branch)."""
        base = f"{self.run_id}:{self.step}:{self.attempt}"
        return f"{base}:{self.branch}" if self.branch else base

    def follow(
        self,
        role: Role,
        payload: AnyPayload,
        *,
        attempt: int | None = None,
        branch: str | None = None,
    ) -> Command:
        """The next command of the same run, one step later."""
        return self.model_copy(
            update={
                "role": role,
                "step": self.step + 1,
                "attempt": self.attempt if attempt is None else attempt,
                "branch": branch,
                "payload": payload,
            }
        )


def new_run_id() -> str:
    """A fresh, URL-safe run id."""
    return uuid.uuid4().hex


def deadline_in(seconds: float) -> float:
    """The Unix time ``seconds`` from now."""
    return time.time() + seconds


class Question(Frozen):
    """What an external system XADDs to ``runs.questions`` to start a run."""

    schema_version: Literal[1] = SCHEMA_VERSION
    api_key: str = Field(min_length=8, max_length=256, description="A tenant API key.")
    question: str = Field(min_length=1, max_length=32_000)
    conversation_id: str | None = Field(default=None, pattern=RUN_ID_PATTERN)
    run_id: str | None = Field(
        default=None, pattern=RUN_ID_PATTERN, description="Set it to make a retry idempotent."
    )
    settings: RunSettings = RunSettings()
    reply_to: ReplyTo = None
    webhook_url: str | None = Field(
        default=None, max_length=2048, description="POST the run's result here, signed."
    )
    webhook_approvals: bool = Field(
        default=False, description="Also POST the run's approval requests to webhook_url."
    )


class RunResult(Frozen):
    """What the finalizer XADDs to a run's ``reply_to`` stream for external publishers."""

    schema_version: Literal[1] = SCHEMA_VERSION
    run_id: str
    tenant_id: str
    status: str
    answer: str | None = None
    conversation_id: str | None = None
    stop_reason: str | None = None
    usage: dict[str, int] = {}
