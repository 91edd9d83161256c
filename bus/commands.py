"""Commands: the typed messages a role's stream carries, keyed by run id.

A command is an envelope (who, which run, which step, until when) around a
role-specific payload. The run's working state travels inside the payload, so
workers keep nothing between messages.
"""

from __future__ import annotations

import time
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, ConfigDict, Field, SerializeAsAny, model_validator

# The version of the client-facing messages (events, questions, run results) is declared
# with the events, in the contracts' distribution (bus/contracts).
from agentbus_contracts.events import SCHEMA_VERSION as SCHEMA_VERSION

# The ids, names and trace context a request is checked against are declared with the wire
# models, so a transport checks them without importing the bus.
from agentbus_contracts.ids import NAME_PATTERN as NAME_PATTERN
from agentbus_contracts.ids import RUN_ID_PATTERN as RUN_ID_PATTERN
from agentbus_contracts.ids import new_run_id as new_run_id
from agentbus_contracts.questions import TraceContext as TraceContext
from bus.frozen import Frozen, replaced
from bus.keys import PREFIX, Role
from bus.run_state import QuestionSettings, RunState
from bus.run_state import RunSettings as RunSettings  # re-exported: commands carry it

#: Version of `Command`, bumped when a role-stream message changes (2: the run state's
#: parts are typed models, tool results are their own payload, routes come from the graph).
COMMAND_SCHEMA_VERSION = 2
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


class AgentTask(Frozen):
    """Work for an agent role (planner, researcher, critic, verifier, finalizer)."""

    kind: Literal["agent_task"] = "agent_task"
    state: RunState


def _is_none(value: object) -> bool:
    return value is None


class ToolCallRequest(Frozen):
    """One tool call the model asked for; ``call_id`` is deterministic per run and step."""

    call_id: str
    name: str
    arguments: dict[str, Any] = {}
    client_result: str | None = Field(
        default=None,
        # Written only when set: a reader of an older release never sees it.
        exclude_if=_is_none,
        description="A client-declared tool's result, as the client sent it when it resumed "
        "the run (`bus.run_state.ClientTool`); None: the client has not run the call yet.",
    )


ToolPurpose = Literal["research", "fact_check", "agent"]
"""Why an agent calls tools: the researcher's research, the last judge's fact-check, or a
team's declared agent (the results go back to the `agent` role)."""


class ToolCallBatch(Frozen):
    """Tool calls for the gateway, with the state the caller continues from.

    ``then`` says what the gateway does with the outcomes: ``return`` them as a
    `ToolResults` to the node the graph names for the batch's ``purpose``, or ``end`` the
    run after the ``tool_result`` events (``agentbus tools call``: a run of one batch, read
    back from its events). ``agent`` labels the calls in events and the audit log.
    """

    kind: Literal["tool_calls"] = "tool_calls"
    agent: str = Field(default="researcher", pattern=r"^[a-z_]{1,32}$")
    purpose: ToolPurpose = "research"
    calls: list[ToolCallRequest]
    state: RunState
    then: Literal["return", "end"] = "return"


class ToolCallResult(Frozen):
    """How one call ended, as the gateway returns it to the calling agent (data, never
    instructions): the status and code, a message the model can act on, the result."""

    call_id: str
    name: str
    status: Literal["ok", "error", "refused", "egress_blocked", "client_pending"]
    code: str
    message: str = ""
    result: Any = None
    truncated: bool = False
    blocked_host: str | None = None
    blob: str | None = Field(
        default=None,
        description="A bulky result's whole text (a run blob); `result` is then a bounded view.",
    )


class ToolResults(Frozen):
    """The gateway's answer to a `ToolCallBatch`: each call's result, in call order.

    The calling agent appends them to its own thread (the researcher's conversation, or the
    fact-check's) and counts the round trip; the gateway never edits the state.
    """

    kind: Literal["tool_results"] = "tool_results"
    purpose: ToolPurpose = "research"
    results: list[ToolCallResult]
    state: RunState
    next_ref: int = Field(
        default=0,
        ge=0,
        description="The run's next free citation number after the citation numbers the "
        "gateway gave these results (0: it gave none); the calling agent takes them.",
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
    state: RunState


class MergeTask(Frozen):
    """Join the gather branches: fuse their results into the run's evidence (or, for a
    ``recheck``, into the fact-check's)."""

    kind: Literal["merge"] = "merge"
    join: str = Field(pattern=r"^[A-Za-z0-9_-]{1,64}$")
    purpose: Literal["evidence", "recheck"] = "evidence"
    state: RunState


class SearchTask(Frozen):
    """A document search for a process without the vector store (the gateway's
    ``search_docs``): the retrieval role runs it, filtered by the command's tenant and
    groups, and writes the hits to the reply stream named by the command
    (``retrieval.remote.reply_key``)."""

    kind: Literal["search"] = "search"
    query: str = Field(min_length=1, max_length=32_000)
    top_k: int = Field(default=5, ge=1, le=50)


class SnapshotTask(Frozen):
    """A consistent copy of the embedded vector store, for ``agentbus backup``: the process
    that owns the store copies it, between two of its writes, into the store's own
    ``.snapshots/NAME`` folder (never a path the message names) and replies on the stream
    named by the command (``retrieval.edge_backup.reply_key``)."""

    kind: Literal["snapshot"] = "snapshot"
    name: str = Field(pattern=r"^[0-9a-f]{32}$", description="The copy's folder name.")


class MemoryTask(Frozen):
    """Remember what a finished run's question said about its user (`agents.roles.remember`).

    Only the user's own question travels here: the run's documents, tool results and
    answer never do, so they cannot become memories.
    """

    kind: Literal["memory"] = "memory"
    question: str = Field(max_length=32_000)
    conversation_id: str | None = None
    message_id: int | None = Field(default=None, description="The question's message id.")
    said_at: float = Field(description="When the question was asked (Unix time).")


AnyPayload = (
    AgentTask
    | ToolCallBatch
    | ToolResults
    | NoopTask
    | IngestTask
    | GatherTask
    | MergeTask
    | SearchTask
    | SnapshotTask
    | MemoryTask
)
Payload = Annotated[AnyPayload, Field(discriminator="kind")]


class Command(Frozen):
    """The envelope every role stream carries."""

    schema_version: Literal[2] = COMMAND_SCHEMA_VERSION
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
    # Serialized as what it is: a checked union serializer would first walk the whole run
    # state to match a member (measured: ~40% of encoding a multi-mode command).
    payload: SerializeAsAny[Payload]

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
        """The next command of the same run, one step later (its trace context is stamped
        where it is published: ``bus.runtime.commit.stamped``)."""
        update: dict[str, Any] = {
            "role": role,
            "step": self.step + 1,
            "attempt": self.attempt if attempt is None else attempt,
            "branch": branch,
            "payload": payload,
        }
        return replaced(self, update)

    def with_trace(self, trace: TraceContext) -> Command:
        """This command carrying ``trace`` as its parent span."""
        return self.model_copy(update={"trace": trace})

    def with_deadline(self, deadline: float) -> Command:
        """This command with another deadline (a queued run that starts now)."""
        return self.model_copy(update={"deadline": deadline})

    def with_payload(self, payload: AnyPayload) -> Command:
        """This command, the same step, carrying ``payload``."""
        return self.model_copy(update={"payload": payload})


def deadline_in(seconds: float) -> float:
    """The Unix time ``seconds`` from now."""
    return time.time() + seconds


class Question(Frozen):
    """What an external system XADDs to ``runs.questions`` to start a run.

    It proves its key one of two ways: ``api_key`` (the key itself, deleted from the
    stream at admission), or ``key_id`` + ``signed_at`` with the entry's ``signature``
    field holding the hex HMAC-SHA256 of this JSON's exact bytes, keyed with the key's
    signing secret (the key never travels).
    """

    model_config = ConfigDict(
        json_schema_extra={
            "oneOf": [{"required": ["api_key"]}, {"required": ["key_id", "signed_at"]}]
        }
    )

    schema_version: Literal[1] = SCHEMA_VERSION
    api_key: str | None = Field(
        default=None, min_length=8, max_length=256, description="A tenant API key."
    )
    key_id: str | None = Field(
        default=None,
        pattern=r"^[0-9a-f]{12}$",
        description="Instead of api_key: the key's id; the entry's `signature` field signs "
        "this JSON with the key's signing secret.",
    )
    signed_at: int | None = Field(
        default=None,
        ge=0,
        description="With key_id: Unix seconds when it was signed (bounds replay).",
    )
    question: str = Field(min_length=1, max_length=32_000)
    conversation_id: str | None = Field(default=None, pattern=RUN_ID_PATTERN)
    run_id: str | None = Field(
        default=None, pattern=RUN_ID_PATTERN, description="Set it to make a retry idempotent."
    )
    settings: QuestionSettings = QuestionSettings()
    reply_to: ReplyTo = None
    webhook_url: str | None = Field(
        default=None, max_length=2048, description="POST the run's result here, signed."
    )
    webhook_approvals: bool = Field(
        default=False, description="Also POST the run's approval requests to webhook_url."
    )
    trace: TraceContext | None = Field(
        default=None, description="The publisher's W3C trace context: the run's trace continues it."
    )

    @model_validator(mode="after")
    def _one_credential(self) -> Question:
        if (self.api_key is None) == (self.key_id is None):
            raise ValueError("give either api_key or key_id (with signed_at), not both")
        if (self.key_id is None) != (self.signed_at is None):
            raise ValueError("key_id and signed_at go together")
        return self


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
    cost_usd: float | None = None
    verified: bool | None = None
    verified_reason: str | None = None
    retry_after_s: int | None = Field(
        default=None,
        description="A rejection that a retry may cure (rate_limited, too_many_active_runs, "
        "tenant_queue_full): seconds to wait before publishing it again.",
    )
