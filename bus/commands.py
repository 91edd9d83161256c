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


class RunState(Frozen):
    """The run's working state; it travels from role to role inside the command."""

    question: str = Field(max_length=32_000)
    conversation_id: str | None = None
    interpreted: str | None = None
    settings: RunSettings = RunSettings()
    plan: list[str] = []
    messages: list[dict[str, Any]] = []
    evidence_ref: str | None = None
    tool_hops: int = 0
    attempts: int = 0
    draft: str | None = None
    critiques: list[dict[str, Any]] = []
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
    """Tool calls for the gateway, with the state the researcher continues from."""

    kind: Literal["tool_calls"] = "tool_calls"
    agent: str = "researcher"
    calls: list[ToolCallRequest]
    state: RunState


class NoopTask(Frozen):
    """A pass-through step: forwards itself ``hops_left`` more times (benchmarks, tests)."""

    kind: Literal["noop"] = "noop"
    hops_left: int = Field(ge=0)
    sent_at: float = 0.0
    fail_times: int = Field(default=0, ge=0, description="Raise on the first N deliveries.")
    work_s: float = Field(default=0.0, ge=0, description="Simulated step duration.")
    tokens: list[str] = []


Payload = Annotated[AgentTask | ToolCallBatch | NoopTask, Field(discriminator="kind")]


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
    payload: Payload

    @property
    def step_id(self) -> str:
        """Deterministic id of this step: run, step number, attempt (and branch)."""
        base = f"{self.run_id}:{self.step}:{self.attempt}"
        return f"{base}:{self.branch}" if self.branch else base

    def follow(
        self,
        role: Role,
        payload: AgentTask | ToolCallBatch | NoopTask,
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
