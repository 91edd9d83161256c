"""What a tool declares about itself: its name, schemas, risk, hosts and limits."""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Self

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator


class Risk(StrEnum):
    """How much harm a call can do; HIGH and CRITICAL need the run's approval."""

    LOW = "LOW"
    MEDIUM = "MEDIUM"
    HIGH = "HIGH"
    CRITICAL = "CRITICAL"


class ToolSpec(BaseModel):
    """What a tool declares about itself.

    Attributes:
        name: unique name the model calls (OpenAI function-name rules).
        description: what the tool does, written for the model.
        version: the tool's own version, recorded in the audit log.
        input_schema: JSON Schema (Draft 2020-12) of the arguments; an object schema.
        output_schema: JSON Schema of the result the tool returns.
        risk: LOW, MEDIUM, HIGH or CRITICAL.
        hosts: hosts the tool may reach (exact, ``*.suffix`` or ``*``); empty means no
            network at all, and the tool gets no egress client.
        side_effects: the tool changes something outside the gateway (runs at most once).
        takes_idempotency_key: the tool accepts the gateway's idempotency key for a call
            (`gateway.ports.Caller.idempotency_key`, through ``run_as``) and applies a key
            at most once downstream; the gateway may then run a call again with the same
            key when its first outcome was lost (exactly once as the downstream sees it).
        timeout_s: wall-time limit for one call.
        max_output_bytes: serialized results larger than this are cut and marked truncated.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(pattern=r"^[A-Za-z0-9_-]{1,64}$")
    description: str = Field(min_length=1)
    version: str = "1.0.0"
    input_schema: dict[str, Any]
    output_schema: dict[str, Any]
    risk: Risk = Risk.LOW
    hosts: tuple[str, ...] = ()
    side_effects: bool = False
    takes_idempotency_key: bool = False
    timeout_s: float = Field(default=10.0, gt=0, le=600)
    max_output_bytes: int = Field(default=65_536, ge=256)

    @field_validator("input_schema", "output_schema")
    @classmethod
    def _valid_schema(cls, schema: dict[str, Any]) -> dict[str, Any]:
        try:
            Draft202012Validator.check_schema(schema)
        except SchemaError as e:
            raise ValueError(f"not a valid Draft 2020-12 schema: {e.message}") from e
        return schema

    @field_validator("input_schema")
    @classmethod
    def _object_input(cls, schema: dict[str, Any]) -> dict[str, Any]:
        # LLM function calling passes arguments as one JSON object.
        if schema.get("type") != "object":
            raise ValueError('input_schema must have "type": "object"')
        return schema

    @model_validator(mode="after")
    def _key_needs_effects(self) -> Self:
        # A key matters only where the gateway guards a call: side-effecting tools.
        if self.takes_idempotency_key and not self.side_effects:
            raise ValueError("takes_idempotency_key needs side_effects=True")
        return self

    @field_validator("hosts")
    @classmethod
    def _lower_hosts(cls, hosts: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(h.strip().lower().rstrip(".") for h in hosts if h.strip())
