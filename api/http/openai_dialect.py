"""The OpenAI chat-completions dialect: request schema, model names, errors and chunks.

agentbus appears as three models: ``agentbus`` (single mode), ``agentbus-multi`` (multi,
standard) and ``agentbus-multi-accurate`` (multi with the verifier); ``agentbus-team-NAME``
runs the tenant's team NAME. The last user message
is the question; what came before is the conversation (see ``api.http.routes.openai_v1``).
``content`` is the run's checked answer, exactly the text the store keeps (see
`AnswerStream`); reasoning, steps (plan, tool calls, critiques, verdicts) and, in multi
mode, the drafts as they stream are ``reasoning_content`` deltas.
"""

from __future__ import annotations

import contextlib
import json
import time
from typing import Any, Literal

from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agentbus_contracts.events import ApprovalRequest, ClientEvent, Done
from agentbus_contracts.questions import QuestionSettings
from api.app.errors import ApiError
from api.http.error_kinds import headers_of, status_of

MODELS: dict[str, QuestionSettings] = {
    "agentbus": QuestionSettings(mode="single"),
    "agentbus-multi": QuestionSettings(mode="multi", accuracy="standard"),
    "agentbus-multi-accurate": QuestionSettings(mode="multi", accuracy="accurate"),
}
MODEL_CREATED = 1_767_225_600  # 2026-01-01: when these model names were first served
CONVERSATION_HEADER = "X-Agentbus-Conversation"
RUN_HEADER = "X-Agentbus-Run"
#: The question's ``multitask`` policy (enqueue, reject, interrupt, rollback).
MULTITASK_HEADER = "X-Agentbus-Multitask"
_DECISIONS = {
    "approve_answer": "approve | reject",
    "egress_approval": "egress_allow_once | egress_allow_always | egress_deny",
}


class ChatMessage(BaseModel):
    """One message of the request (content as text or as a list of text parts)."""

    model_config = ConfigDict(extra="allow")

    role: Literal["system", "developer", "user", "assistant", "tool", "function"]
    content: str | list[dict[str, Any]] | None = None
    tool_call_id: str | None = Field(default=None, max_length=200)

    @property
    def text(self) -> str:
        """The message's text (text parts joined; other parts ignored)."""
        if isinstance(self.content, list):
            return "".join(str(p.get("text", "")) for p in self.content if p.get("type") == "text")
        return self.content or ""


class StreamOptions(BaseModel):
    """``stream_options``: only ``include_usage`` means something here."""

    model_config = ConfigDict(extra="allow")

    include_usage: bool = False


class JsonSchemaFormat(BaseModel):
    """``response_format.json_schema``: the schema the answer must be valid against."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    name: str = Field(min_length=1, max_length=64)
    json_schema: dict[str, Any] = Field(default_factory=dict[str, Any], alias="schema")
    strict: bool | None = None


class ResponseFormat(BaseModel):
    """``response_format``: ``text`` (prose, the default), ``json_object`` (a JSON object) or
    ``json_schema`` (a JSON document valid against ``json_schema.schema``)."""

    model_config = ConfigDict(extra="forbid")

    type: Literal["text", "json_object", "json_schema"]
    json_schema: JsonSchemaFormat | None = None


class ChatRequest(BaseModel):
    """``POST /v1/chat/completions``; sampling options are accepted and ignored (the
    tenant's settings choose the model and how it is run). ``n`` above 1 and the legacy
    ``functions`` are refused; ``tools`` are the client's own (`api.http.openai_request`)."""

    model_config = ConfigDict(extra="allow")

    model: str
    messages: list[ChatMessage] = Field(min_length=1)
    stream: bool = False
    stream_options: StreamOptions | None = None
    user: str | None = Field(default=None, max_length=256)
    n: int = Field(default=1, ge=1)
    tools: list[dict[str, Any]] | None = None
    tool_choice: str | dict[str, Any] | None = None
    functions: list[dict[str, Any]] | None = None
    response_format: ResponseFormat | None = None


class OpenAIErrorDetail(BaseModel):
    """What OpenAI's error document says: message, type, code, param."""

    message: str
    type: str
    code: str | None = None
    param: str | None = None


class OpenAIErrorBody(BaseModel):
    """Every error of the OpenAI dialect: ``{"error": {message, type, code, param}}``."""

    error: OpenAIErrorDetail


class OpenAIError(Exception):
    """An error to answer in OpenAI's shape (``{"error": {message, type, code, param}}``)."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        type: str = "invalid_request_error",
        code: str | None = None,
        param: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status, self.message, self.type = status, message, type
        self.code, self.param, self.headers = code, param, headers or {}

    @classmethod
    def of(cls, error: ApiError) -> OpenAIError:
        """The OpenAI form of one of the API's own errors (status and code kept)."""
        given = status_of(error)
        kind = "invalid_request_error"
        if given == 429:
            kind = "rate_limit_error"
        elif given >= 500:
            kind = "server_error"
        code = "invalid_api_key" if given == 401 else error.code
        message = f"{error.message} ({error.hint})" if error.hint else error.message
        status = 400 if given == 422 else given
        return cls(
            status, message, type=kind, code=code, param=error.field, headers=headers_of(error)
        )

    def body(self) -> dict[str, Any]:
        """The error document."""
        doc = {"message": self.message, "type": self.type, "code": self.code, "param": self.param}
        return {"error": doc}

    def response(self) -> JSONResponse:
        """The error as a JSON response."""
        return JSONResponse(self.body(), status_code=self.status, headers=self.headers)


#: A model name that runs a team of the tenant's: ``agentbus-team-NAME``.
TEAM_MODEL_PREFIX = "agentbus-team-"


def settings_for(model: str) -> QuestionSettings:
    """The run settings a model name stands for (``agentbus-team-NAME``: the tenant's team
    NAME, refused at admission when it has none), or a 404 ``model_not_found``."""
    found = MODELS.get(model)
    if found is None and model.startswith(TEAM_MODEL_PREFIX):
        with contextlib.suppress(ValidationError):
            found = QuestionSettings(team=model.removeprefix(TEAM_MODEL_PREFIX))
    if found is None:
        known = ", ".join(MODELS)
        raise OpenAIError(
            404, f"the model {model!r} does not exist; use one of {known}",
            code="model_not_found", param="model",
        )  # fmt: skip
    return found


def model_list() -> dict[str, Any]:
    """``GET /v1/models``."""
    return {"object": "list", "data": [model_card(name) for name in MODELS]}


def model_card(name: str) -> dict[str, Any]:
    """One model as ``/v1/models`` lists it."""
    return {"id": name, "object": "model", "created": MODEL_CREATED, "owned_by": "agentbus"}


def split_messages(messages: list[ChatMessage]) -> tuple[str, list[ChatMessage]]:
    """The question (the last message, which must be the user's) and the turns before it
    (user and assistant messages with text; system and tool messages are not kept)."""
    last = messages[-1]
    if last.role != "user" or not last.text.strip():
        raise OpenAIError(
            400, "the last message must be the user's question, with text",
            code="invalid_request", param="messages",
        )  # fmt: skip
    earlier = [m for m in messages[:-1] if m.role in ("user", "assistant") and m.text.strip()]
    return last.text, earlier


def pause_message(event: ApprovalRequest) -> str:
    """What a completion says when its run stops at a gate: why, and how to resume it."""
    decisions = _DECISIONS.get(event.reason, "approve | reject")
    return (
        f"\n\n[agentbus] The run paused for approval ({event.reason}). Resume it with "
        f'POST /api/v1/runs/{event.run_id}/resume {{"decision": "{decisions}"}}; '
        f"run id: {event.run_id}"
    )


def usage_of(tokens: dict[str, int]) -> dict[str, int]:
    """OpenAI's usage block from a run's token counts."""
    prompt, completion = tokens.get("prompt_tokens", 0), tokens.get("completion_tokens", 0)
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


def verification(run_id: str, done: Done) -> dict[str, Any]:
    """The ``agentbus`` metadata of a finished completion: the run and what its judges said."""
    return {
        "run_id": run_id,
        "status": done.status,
        "verified": done.verified,
        "verified_reason": done.verified_reason,
    }


def step_note(event: ClientEvent) -> str | None:
    """A line of ``reasoning_content`` for a step a chat client should see, or None."""
    match event.type:
        case "plan":
            return "plan: " + "; ".join(event.steps) + "\n"
        case "tool_call":
            return f"→ {event.tool}({json.dumps(event.args, ensure_ascii=False)})\n"
        case "tool_result":
            return f"← {event.tool}: {event.status}\n"
        case "critique":
            return f"critic: {event.verdict} {event.reason}\n"
        case "verdict":
            return f"verifier: {event.verdict} {'; '.join(event.reasons)}\n"
        case _:
            return None


_RETRY_NOTE = (
    "\n\n(a step was retried and wrote a different text: the text above from it is superseded)\n\n"
)

_SUPERSEDED_NOTE = "\n\n({reason}: the text above is not the answer)\n\n"


class AnswerStream:
    """What a streamed completion sends for each run event: ``content`` or ``reasoning_content``.

    * Single mode (``agentbus``): no judge sends an answer back, so answer tokens are
      ``content`` as they stream (already checked: `retrieval.citations`). A step that is
      run again (a worker died mid-answer) streams its text again; the part already sent
      is not sent twice. Only if the new text differs from what was sent does the stream
      say so in ``content``; likewise when the researcher supersedes a draft that was not
      an answer (`agents.checks.answer_guard`: a tool's error echoed, a runaway). Those are the
      two cases where ``content`` is not the stored answer.
    * Multi and custom modes: a judge may send a draft back, and text sent as ``content``
      cannot be taken back. So every draft streams as ``reasoning_content`` (labelled
      ``[draft N]``, with the reason when one is sent back), and the final answer, as the
      store keeps it, is sent as ``content`` once the run is done.
    """

    def __init__(self) -> None:
        self.live = True  # answer tokens go out as content (until run_started says multi)
        self._sent: dict[str | None, str] = {}  # content sent per step
        self._replay: dict[str | None, str] = {}  # a retried step's text still to match
        self._again: dict[str | None, str] = {}  # what the retried step has streamed again
        self._attempt: int | None = None

    def deltas(self, event: ClientEvent) -> list[dict[str, str]]:
        """The deltas (``content=`` / ``reasoning_content=``) to send for ``event``."""
        match event.type:
            case "run_started":
                self.live = event.mode == "single"
            case "answer" if self.live:
                return self._content(event.step_id, event.delta)
            case "answer":
                label = ""
                if event.attempt != self._attempt:
                    self._attempt = event.attempt
                    label = f"\n[draft {event.attempt + 1}]\n"
                return [{"reasoning_content": label + event.delta}]
            case "draft_superseded" if self.live:  # sent as content: it cannot be taken back
                self._sent.clear()
                self._replay.clear()
                self._again.clear()
                return [{"content": _SUPERSEDED_NOTE.format(reason=event.reason)}]
            case "draft_superseded":
                note = f"\n[draft {event.attempt + 1} sent back: {event.reason}]\n"
                return [{"reasoning_content": note}]
            case "step_retry" if self.live and self._sent.get(event.step_id):
                self._replay[event.step_id] = self._sent.pop(event.step_id)
                self._again[event.step_id] = ""
            case "done" if not self.live and event.status == "done":
                return [{"content": event.answer or ""}]
            case _:
                note = step_note(event)
                return [{"reasoning_content": note}] if note else []
        return []

    def _content(self, step: str | None, text: str) -> list[dict[str, str]]:
        replay = self._replay.get(step)
        if replay is not None:
            again = self._again[step] + text
            if replay.startswith(again):  # the same text again: already sent
                self._again[step] = again
                return []
            del self._replay[step], self._again[step]
            if again.startswith(replay):
                text = again[len(replay) :]
                self._sent[step] = again
                return [{"content": text}] if text else []
            self._sent[step] = again
            return [{"content": _RETRY_NOTE + again}]
        self._sent[step] = self._sent.get(step, "") + text
        return [{"content": text}]


class Chunks:
    """Builds the ``chat.completion.chunk`` documents of one streamed completion."""

    def __init__(self, run_id: str, model: str) -> None:
        self.id = f"chatcmpl-{run_id}"
        self.model = model
        self.created = int(time.time())

    def delta(self, finish: str | None = None, **delta: str) -> str:
        """One SSE ``data:`` line carrying a delta (or the finish reason)."""
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return self._line({"choices": [choice]})

    def tool_calls(self, calls: list[dict[str, Any]]) -> list[str]:
        """The lines that hand the client its tool calls: one delta each, whole (id, name
        and arguments at once), then the finish reason ``tool_calls``."""
        lines = [
            self._line({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": i, **call}]},
                                     "finish_reason": None}]})
            for i, call in enumerate(calls)
        ]  # fmt: skip
        finish: dict[str, Any] = {"index": 0, "delta": {}, "finish_reason": "tool_calls"}
        return [*lines, self._line({"choices": [finish]})]

    def stop(self, agentbus: dict[str, Any]) -> str:
        """The finishing line, with the run's ``agentbus`` metadata (what its judges said)."""
        choice: dict[str, Any] = {"index": 0, "delta": {}, "finish_reason": "stop"}
        return self._line({"choices": [choice], "agentbus": agentbus})

    def usage(self, tokens: dict[str, int]) -> str:
        """The usage chunk (``stream_options.include_usage``): no choices, only usage."""
        return self._line({"choices": [], "usage": usage_of(tokens)})

    def _line(self, doc: dict[str, Any]) -> str:
        full = {
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            **doc,
        }
        return f"data: {json.dumps(full, ensure_ascii=False)}\n\n"
