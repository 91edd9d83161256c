"""The agents' settings: which chat model, and the deployment's answer gate."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr

from bus.settings import EnvSettings


class ModelPrice(BaseModel):
    """What a model costs, in US dollars per 1,000 tokens."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    input: float = Field(ge=0)
    output: float = Field(ge=0)


class AgentSettings(EnvSettings):
    """The chat model adapter and its endpoint (``AGENTBUS_LLM*``), and the answer gate default."""

    llm: Literal["local", "scripted", "openai"] = Field(
        default="local",
        description="LLM adapter: local | scripted | openai (OpenAI-compatible endpoint).",
    )
    llm_base_url: str | None = Field(
        default=None, description="OpenAI-compatible endpoint root incl. /v1 (llm=openai)."
    )
    llm_api_key: SecretStr | None = Field(default=None, description="Bearer key (llm=openai).")
    llm_model: str | None = Field(default=None, description="Model name (llm=openai).")
    llm_token_delay_s: float = Field(
        default=0.0, ge=0, description="Per-token delay of the scripted model (llm=scripted)."
    )
    llm_prices: dict[str, ModelPrice] = Field(
        default={},
        description='Price table, JSON: {"MODEL": {"input": USD, "output": USD}} per 1k tokens; '
        "MODEL is the model's name with or without its adapter prefix (openai:gpt-4o-mini).",
    )
    agent_human_gate: bool = Field(
        default=False, description="Deployment default: approve answers before they are final."
    )
