"""What a message sent to the agent does: start a run, or decide the gate of the task it names.

A message without a task starts a run (its text the question, ``contextId`` the
conversation, ``metadata.skill`` (a card's skill, or ``team:NAME`` for a team of the
tenant's) and ``metadata.multitask`` its settings, ``messageId`` the idempotency key). A
message on a task paused at a gate (``input-required``) is the decision. A task that has
ended, or is still working, takes no message (-32004: A2A 1.0, section 3.1.1); a
``contextId`` other than the task's is refused (section 3.4.3).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, get_args

from a2a.types import a2a_pb2 as a2a
from google.protobuf import json_format
from pydantic import ValidationError

from agentbus_contracts.events import ClientEvent
from agentbus_contracts.ids import RUN_ID_PATTERN, TEAM_NAME_PATTERN
from agentbus_contracts.questions import Multitask, QuestionSettings
from api.app import metrics
from api.app.ask import Ask
from api.http.a2a_follow import past_events
from api.http.a2a_rpc import INVALID_PARAMS, UNSUPPORTED_OPERATION, RpcError
from api.http.a2a_tasks import SKILLS
from bus.json_values import is_object

#: A skill that runs a team of the caller's tenant: ``team:NAME``.
TEAM_SKILL_PREFIX = "team:"

if TYPE_CHECKING:
    from api.app.auth import Principal
    from api.http.a2a_uses import A2aUses

_ID = re.compile(RUN_ID_PATTERN)


async def begin(
    deps: A2aUses, who: Principal, given: a2a.SendMessageRequest
) -> tuple[str, list[tuple[str, ClientEvent]], str]:
    """Start a run for the message, or decide the gate of the task it names.

    Returns:
        The run, its events (with their ids) before this message, and its context.
    """
    message = given.message
    text = "\n".join(p.text for p in message.parts if p.text).strip()
    if not text:
        raise RpcError(INVALID_PARAMS, "message.parts: a text part is required")
    if message.context_id and _ID.fullmatch(message.context_id) is None:
        raise RpcError(INVALID_PARAMS, "message.contextId: 1-64 letters, digits, _ or -")
    if message.task_id:
        return await _decide(deps, who, message, text)
    metadata = _metadata(given)
    settings = _settings(_skill(metadata.get("skill", "single")), metadata.get("multitask"))
    ask = Ask(text, message.context_id or None, settings)
    idem = f"a2a:{message.message_id}" if message.message_id else None
    started = await deps.starter.start(who, ask, idempotency_key=idem)
    if not started.replayed:
        metrics.RUNS_STARTED.labels("a2a").inc()
    return started.run_id, [], started.conversation_id


async def _decide(
    deps: A2aUses, who: Principal, message: a2a.Message, decision: str
) -> tuple[str, list[tuple[str, ClientEvent]], str]:
    task_id = message.task_id
    ref = await deps.access.visible(who, task_id, read=None)
    context = (ref.record.conversation_id or "") if ref.record else ""
    if message.context_id and message.context_id != context:
        raise RpcError(INVALID_PARAMS, f"message.contextId: task {task_id!r} is in another")
    if ref.record is None or ref.record.status.value != "suspended":
        state = ref.record.status.value if ref.record else "queued"
        raise RpcError(
            UNSUPPORTED_OPERATION,
            f"task {task_id!r} is not waiting for input ({state}): "
            "send a new message, with its contextId to continue the conversation",
        )
    # The run is paused: nothing is added to its events until the decision below.
    before = await past_events(deps, task_id, ref.shard)
    await deps.gates.decide(who, task_id, decision.lower())
    return task_id, before, context


def _skill(name: object) -> dict[str, str]:
    """The settings a skill asks with: a card's skill, or ``team:NAME`` (the caller's
    tenant's team NAME, refused at admission when it has none)."""
    if isinstance(name, str) and name.startswith(TEAM_SKILL_PREFIX):
        team = name.removeprefix(TEAM_SKILL_PREFIX)
        if re.fullmatch(TEAM_NAME_PATTERN, team):
            return {"team": team}
    if not isinstance(name, str) or name not in SKILLS:
        known = ", ".join([*SKILLS, f"{TEAM_SKILL_PREFIX}NAME"])
        raise RpcError(INVALID_PARAMS, f"metadata.skill: one of {known}")
    return SKILLS[name]


def _settings(skill: dict[str, str], multitask: object) -> QuestionSettings:
    """The skill's settings, with ``metadata.multitask`` when the message sets it."""
    chosen: dict[str, object] = dict(skill)
    if multitask is not None:
        chosen["multitask"] = multitask
    try:
        return QuestionSettings.model_validate(chosen)
    except ValidationError as e:
        allowed = ", ".join(get_args(Multitask))
        raise RpcError(INVALID_PARAMS, f"metadata.multitask: one of {allowed}") from e


def _metadata(given: a2a.SendMessageRequest) -> dict[str, Any]:
    doc: object = json_format.MessageToDict(given.metadata) if given.HasField("metadata") else {}
    return doc if is_object(doc) else {}
