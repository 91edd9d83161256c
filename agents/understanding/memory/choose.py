"""Which memory extractor a deployment gets (``AGENTBUS_MEMORY_EXTRACTOR``).

``auto`` (the default) takes the model for an OpenAI-compatible endpoint (the models served
that way are of a class above the local ones; not measured here) and for the local models
`MODEL_BETTER` marks, those the memory eval measured better than the rules on the set's
test half (docs/evals.md); the rules otherwise. The scripted model understands nothing, so
it gets the rules.
"""

from __future__ import annotations

from typing import Literal

from agents.llm.ports import LLM
from agents.understanding.memory.model import ModelMemory
from agents.understanding.memory.ports import MemoryExtractor
from agents.understanding.memory.rules import RulesMemory

Choice = Literal["auto", "model", "rules"]
#: The local models whose memory beat the rules' on the test half (docs/evals.md).
MODEL_BETTER: dict[str, bool] = {"qwen2.5-coder-1.5b": False, "qwen2.5-coder-0.5b": False}


def model_is_better(adapter: str, local_model: str) -> bool:
    """Whether ``auto`` takes the model for this adapter (and local model)."""
    match adapter:
        case "openai":
            return True
        case "local":
            return MODEL_BETTER.get(local_model, False)
        case _:
            return False


def memory_extractor(
    choice: Choice, llm: LLM | None, *, adapter: str, local_model: str
) -> MemoryExtractor:
    """The extractor the settings choose; the rules stand behind the model as its fallback."""
    rules = RulesMemory()
    wanted = choice == "model" or (choice == "auto" and model_is_better(adapter, local_model))
    return ModelMemory(llm, rules) if wanted and llm is not None else rules
