"""What a chat completion asks for beside its question: how many choices, the client's own
tools, and the answer's format (``response_format``).

* ``n`` above 1 is refused (400, ``param: n``): a run gives one answer.
* ``tools`` are the client's own (`api.app.client_tools`): offered to the researcher beside
  the gateway's; when the model calls one, the run pauses and the completion ends with
  ``tool_calls`` (``finish_reason: "tool_calls"``); the next request, whose last messages
  are the ``tool`` results, resumes the run. A tool with a server tool's name is a 400
  ``tool_name_taken``. ``tool_choice: "none"`` offers none; ``auto`` offers them all;
  ``required`` and a named function offer them all and ask the model for a call (the local
  model's grammar then allows only calls; an OpenAI-compatible backend gets
  ``tool_choice: required``). The legacy ``functions`` are refused (400): use ``tools``.
* ``response_format`` ``json_object`` or ``json_schema`` makes the answer a JSON document:
  the schema goes with the run to the model (the local model's grammar, or the provider's
  structured output), and the answer is checked against it here before it is sent. One
  that is not valid ends the completion with a 500 ``response_format_unmet`` error, never
  with prose in place of the document.
"""

from __future__ import annotations

import json
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError
from jsonschema.validators import validator_for

from agentbus_contracts.events import ApprovalRequest
from api.app.client_tools import Declared, client_call_id
from api.http.openai_dialect import ChatRequest, OpenAIError
from bus.json_values import is_object
from gateway.checks.schema_errors import describe_errors

#: ``json_object``: any JSON object.
JSON_OBJECT: dict[str, Any] = {"type": "object"}
#: A client that asked for a document must not get the question answered again by a retry.
NO_RETRY = {"X-Should-Retry": "false"}


def refuse_unsupported(chat: ChatRequest) -> None:
    """Refuse what a run cannot do: more than one choice, the legacy ``functions``."""
    if chat.n > 1:
        raise OpenAIError(
            400, f"n: a run gives one answer, so n must be 1 (it was {chat.n})",
            code="invalid_request", param="n",
        )  # fmt: skip
    if chat.functions:
        raise OpenAIError(
            400, "functions: the legacy function list is not supported; declare them as tools",
            code="unsupported_parameter", param="functions",
        )  # fmt: skip


def declared_tools(chat: ChatRequest) -> list[Declared]:
    """The client's tools as the request declares them (none with ``tool_choice: none``)."""
    if not chat.tools or chat.tool_choice == "none":
        return []
    declared: list[Declared] = []
    for i, entry in enumerate(chat.tools):
        function: object = entry.get("function")
        if entry.get("type") != "function" or not is_object(function):
            raise OpenAIError(
                400, f"tools[{i}]: only function tools are supported",
                code="invalid_request", param=f"tools[{i}].type",
            )  # fmt: skip
        name, about = function.get("name"), function.get("description")
        declared.append(
            Declared(
                name=name if isinstance(name, str) else "",
                description=about if isinstance(about, str) else "",
                parameters=function.get("parameters"),
                where=f"tools[{i}].function",
            )
        )
    return declared


def tools_required(chat: ChatRequest) -> bool:
    """Whether the client asked for a tool call: ``tool_choice`` ``required`` or a function."""
    return bool(chat.tools) and (chat.tool_choice == "required" or is_object(chat.tool_choice))


def tool_results(chat: ChatRequest) -> list[tuple[str, str]]:
    """The client's tool results the request ends with ((call id, text), in order), or
    none when its last message is not a ``tool`` message."""
    found: list[tuple[str, str]] = []
    for message in reversed(chat.messages):
        if message.role != "tool":
            break
        if not message.tool_call_id:
            raise OpenAIError(
                400, "a tool message needs the tool_call_id it answers",
                code="invalid_request", param="messages",
            )  # fmt: skip
        found.insert(0, (message.tool_call_id, message.text))
    return found


def tool_calls_of(event: ApprovalRequest) -> list[dict[str, Any]]:
    """The ``tool_calls`` of a completion whose run waits for its client's tools."""
    return [
        {
            "id": client_call_id(event.run_id, call.id),
            "type": "function",
            "function": {"name": call.name, "arguments": json.dumps(call.arguments)},
        }
        for call in event.calls or ()
    ]


def answer_schema(chat: ChatRequest) -> dict[str, Any] | None:
    """The JSON Schema the answer must be valid against (None: prose), checked as a schema."""
    chosen = chat.response_format
    if chosen is None or chosen.type == "text":
        return None
    if chosen.type == "json_object":
        return JSON_OBJECT
    if chosen.json_schema is None:
        raise OpenAIError(
            400, "response_format.json_schema is required when its type is json_schema",
            code="invalid_request", param="response_format.json_schema",
        )  # fmt: skip
    schema = chosen.json_schema.json_schema
    try:
        validator_for(schema, default=Draft202012Validator).check_schema(schema)
    except SchemaError as e:
        raise OpenAIError(
            400, f"response_format.json_schema.schema is not a JSON Schema: {e.message}",
            code="invalid_request", param="response_format.json_schema.schema",
        ) from e  # fmt: skip
    return schema


def checked_answer(run_id: str, answer: str, schema: dict[str, Any]) -> str:
    """``answer`` if it is a JSON document valid against ``schema``, else the error to send."""
    try:
        document = json.loads(answer)
    except json.JSONDecodeError as e:
        raise unmet(run_id, f"it is not JSON ({e.msg} at character {e.pos})") from e
    validator = validator_for(schema, default=Draft202012Validator)(schema)
    problems = describe_errors(validator.iter_errors(document))
    if problems is not None:
        raise unmet(run_id, f"it is not valid against the schema: {problems}")
    return answer


def unmet(run_id: str, why: str) -> OpenAIError:
    """The error for a run whose answer is not the document ``response_format`` asked for."""
    return OpenAIError(
        500, f"the answer of run {run_id} does not follow response_format: {why}. The model "
        "could not comply; try a model that supports structured output, or a simpler schema",
        type="server_error", code="response_format_unmet", param="response_format",
        headers=NO_RETRY,
    )  # fmt: skip
