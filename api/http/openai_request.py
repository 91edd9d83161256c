"""What a chat completion asks for beside its question: how many choices, whose tools, and
the answer's format (``response_format``).

* ``n`` above 1 is refused (400, ``param: n``): a run gives one answer.
* ``tools`` and ``functions`` (tools the client would run) are refused (400, naming the
  field): agentbus's agents call the tools of its own gateway, and calling back to the
  client's is not supported yet. Ignoring them would answer as if they had been offered.
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

from api.http.openai_dialect import ChatRequest, OpenAIError
from gateway.checks.schema_errors import describe_errors

#: ``json_object``: any JSON object.
JSON_OBJECT: dict[str, Any] = {"type": "object"}
#: A client that asked for a document must not get the question answered again by a retry.
NO_RETRY = {"X-Should-Retry": "false"}


def refuse_unsupported(chat: ChatRequest) -> None:
    """Refuse what a run cannot do: more than one choice, tools the client runs."""
    if chat.n > 1:
        raise OpenAIError(
            400, f"n: a run gives one answer, so n must be 1 (it was {chat.n})",
            code="invalid_request", param="n",
        )  # fmt: skip
    for field in ("tools", "functions"):
        if getattr(chat, field):
            raise OpenAIError(
                400, f"{field}: client-side tools are not supported yet; agentbus's agents "
                "use the tools of its own gateway",
                code="unsupported_parameter", param=field,
            )  # fmt: skip


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
