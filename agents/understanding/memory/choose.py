"""Which memory extractor a deployment gets (``AGENTBUS_MEMORY_EXTRACTOR``).

``auto`` (the default) takes the model for an OpenAI-compatible endpoint (the models served
that way are of a class above the local ones; not measured here) and, for a local model,
what `MEASURED_BEST` names: the extractor the memory eval measured best on the set's test
half for that model (docs/evals.md), the model alone, the model with the rules' facts on
topics it left out (``model+rules``), or the rules. The scripted model understands nothing,
so it gets the rules.
"""

from __future__ import annotations

from typing import Literal

from agents.llm.ports import LLM
from agents.understanding.memory.combined import ModelWithRules
from agents.understanding.memory.model import ModelMemory
from agents.understanding.memory.ports import MemoryExtractor
from agents.understanding.memory.rules import RulesMemory

Choice = Literal["auto", "model", "model+rules", "rules"]
Measured = Literal["model", "model+rules", "rules"]
#: Each local model's best memory extractor on the test half (docs/evals.md). The whole
#: half (80 statements, 7 Dec 2026), kept right / facts right: rules 37/42, 98 %; 1.5B
#: 30/42, 88 %; 1.5B with the rules 36/42, 88 %; 0.5B 18/42, 73 %; 0.5B with the rules
#: 26/42, 76 %. None stored a fact from a negative; the rules stay best for both.
MEASURED_BEST: dict[str, Measured] = {
    "qwen2.5-coder-1.5b": "rules",
    "qwen2.5-coder-0.5b": "rules",
}


def best_for(adapter: str, local_model: str) -> Measured:
    """What ``auto`` takes for this adapter (and local model)."""
    match adapter:
        case "openai":
            return "model"
        case "local":
            return MEASURED_BEST.get(local_model, "rules")
        case _:
            return "rules"


def memory_extractor(
    choice: Choice, llm: LLM | None, *, adapter: str, local_model: str
) -> MemoryExtractor:
    """The extractor the settings choose; the rules stand behind the model as its fallback."""
    rules = RulesMemory()
    wanted = best_for(adapter, local_model) if choice == "auto" else choice
    if llm is None or wanted == "rules":
        return rules
    model = ModelMemory(llm, rules)
    return ModelWithRules(model, rules) if wanted == "model+rules" else model
