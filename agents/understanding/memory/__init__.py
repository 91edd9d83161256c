"""Long-term memory: what a user says about themselves, read from their own question.

`ports.MemoryExtractor` is the port; `model.ModelMemory` asks the configured chat model under
a JSON schema, `rules.RulesMemory` reads the question by rules (`rules/`: lemmas, no
model). `choose.memory_extractor` picks one
from the settings and the measured figures (docs/evals.md).
"""
