"""The agents' settings: which chat models, and the deployment's run defaults."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr

from bus.run_state import MAX_TOOL_HOPS
from bus.settings import EnvSettings


class ModelPrice(BaseModel):
    """What a model costs, in US dollars per 1,000 tokens."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    input: float = Field(ge=0)
    output: float = Field(ge=0)


class AgentSettings(EnvSettings):
    """The chat model adapter and its endpoint (``AGENTBUS_LLM*``), and the run defaults
    a tenant's settings and a question may change (``AGENTBUS_AGENT_*`` and the like)."""

    llm: Literal["local", "scripted", "openai"] = Field(
        default="local",
        description="LLM adapter: local | scripted | openai (OpenAI-compatible endpoint).",
    )
    llm_base_url: str | None = Field(
        default=None, description="OpenAI-compatible endpoint root incl. /v1 (llm=openai)."
    )
    llm_api_key: SecretStr | None = Field(default=None, description="Bearer key (llm=openai).")
    llm_model: str | None = Field(default=None, description="Model name (llm=openai).")
    llm_models: str = Field(
        default="",
        description="Comma-separated models runs may choose, the default first (llm=openai); "
        "empty: only AGENTBUS_LLM_MODEL. Anything else is refused (403 model_not_allowed).",
    )
    llm_think_param: Literal["none", "chat_template_kwargs", "reasoning_effort"] = Field(
        default="none",
        description="How `think` reaches the server (llm=openai): chat_template_kwargs "
        "(enable_thinking: vLLM, llama.cpp, Qwen3) or reasoning_effort (OpenAI o-series).",
    )
    llm_local_model: Literal["qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b"] = Field(
        default="qwen2.5-coder-0.5b",
        description="The local model (llm=local): the 0.5B (`make install`) or the stronger "
        "1.5B (`make install-1.5b`).",
    )
    memory_extractor: Literal["auto", "model", "model+rules", "rules"] = Field(
        default="auto",
        description="How the memory step reads what users say about themselves: model (the "
        "chat model under a JSON schema, the rules as its fallback) | model+rules (the "
        "model's facts, and the rules' on topics it left out) | rules (lemmas, no model) | "
        "auto (the model for an OpenAI-compatible endpoint; for a local model, the one of "
        "the three docs/evals.md measured best for it).",
    )
    llm_threads: int | None = Field(
        default=None,
        ge=1,
        le=256,
        description="CPU threads of the local model; unset: every core, at most 8. On a "
        "host shared with busy processes 1 can be several times faster (measured: 6.6 vs "
        "1.0 tokens/s).",
    )
    llm_context_tokens: int = Field(
        default=8192, ge=512, le=131_072, description="The local model's context window."
    )
    llm_context_window: int | None = Field(
        default=None,
        ge=1024,
        le=10_000_000,
        description="The context window, in tokens, of the OpenAI-compatible (or scripted) "
        "model: a conversation's older turns are folded into a summary before a model "
        "call's history would outgrow its share of it. Unset: AGENTBUS_LLM_CONTEXT_TOKENS. "
        "The local model always uses AGENTBUS_LLM_CONTEXT_TOKENS.",
    )
    llm_parallel: int = Field(
        default=4,
        ge=1,
        le=16,
        description="Slots of the local model (llm=local): requests it decodes at once, each "
        "with the whole context window and its own cached prefix (1: one at a time, every "
        "call re-fills the previous one's prompt). See docs/local-models-speed.md.",
    )
    llm_draft_model: Literal["none", "ngram", "qwen2.5-coder-0.5b"] = Field(
        default="none",
        description="Speculative decoding of the local model (llm=local): a draft model "
        "(the 0.5B drafts for the 1.5B, one tokenizer) or `ngram` (drafts from the prompt's "
        "own n-grams, no second model). See docs/local-models-speed.md.",
    )
    llm_fold_answer: bool = Field(
        default=True,
        description="After a tool result the local model (llm=local) decides and answers in "
        "one generation: a grammar allows one more tool call (JSON) or the answer in prose. "
        "False: a JSON decision, then a separate answer call. See "
        "docs/local-models-speed.md.",
    )
    llm_draft_max: int = Field(
        default=8, ge=1, le=64, description="Tokens the draft model proposes per step at most."
    )
    llm_token_delay_s: float = Field(
        default=0.0, ge=0, description="Per-token delay of the scripted model (llm=scripted)."
    )
    llm_latency_s: float = Field(
        default=0.0,
        ge=0,
        description="Seconds the scripted model waits before each call's first event "
        "(llm=scripted), as a real model's time to first token.",
    )
    llm_prices: dict[str, ModelPrice] = Field(
        default={},
        description='Price table, JSON: {"MODEL": {"input": USD, "output": USD}} per 1k tokens; '
        "MODEL is the model's name with or without its adapter prefix (openai:gpt-4o-mini).",
    )
    llm_reserve_tokens: int = Field(
        default=1024,
        ge=16,
        le=1_000_000,
        description="Completion tokens a metered model call holds against its budgets when "
        "it sets no max_tokens (it holds more as it streams, while there is room).",
    )
    agent_human_gate: bool = Field(
        default=False, description="Deployment default: approve answers before they are final."
    )
    agent_mode: Literal["single", "multi", "custom"] = Field(
        default="single", description="Deployment default mode of a run."
    )
    agent_accuracy: Literal["standard", "accurate"] = Field(
        default="standard", description="Deployment default accuracy (accurate adds a verifier)."
    )
    claim_check: Literal["model", "rules"] = Field(
        default="rules",
        description="How the last judge checks the draft's claims against the evidence: "
        "rules (no model call) or model (one call per draft under a JSON schema; the rules "
        "add their findings). Rules by default: no local model has yet been measured to do "
        "better on the judges' drafts (docs/evals.md); a stronger served model may.",
    )
    verifier_check: bool = Field(
        default=True, description="The last judge fact-checks the answer (re-query + tools)."
    )
    agent_max_tool_hops: int = Field(
        default=8, ge=0, le=MAX_TOOL_HOPS, description="Researcher's gateway round trips."
    )
    approve_high_risk: bool = Field(
        default=False, description="HIGH-risk tools run without a per-run approval."
    )

    def context_window(self) -> int:
        """The chosen model's context window in tokens: the local model's ``n_ctx``, else
        the configured window (the local one's size when none is configured)."""
        if self.llm == "local" or self.llm_context_window is None:
            return self.llm_context_tokens
        return self.llm_context_window

    def served_models(self) -> list[str]:
        """The models runs may choose, the default first (empty: no choice offered)."""
        listed = [m.strip() for m in self.llm_models.split(",") if m.strip()]
        if listed:
            return list(dict.fromkeys(listed))
        return [self.llm_model] if self.llm_model else []

    def default_model(self) -> str | None:
        """The model a run uses unless its tenant or question chose another."""
        return next(iter(self.served_models()), None)
