"""The memory step with the model extractor, through the bus (real Redis) into the store
(real SQL): the scripted model answers in the schema's JSON; what the user states is kept,
a correction replaces the fact it corrects, and a request keeps nothing."""

from __future__ import annotations

import json
from collections.abc import Sequence

from agents.llm.ports import ChatMessage, LLMOptions, ToolDefinition
from agents.llm.scripted import ScriptedLLM, Turn, benchmark_turn, text, turn
from agents.roles.remember import make_memory_applier
from bus.store import Scope
from bus.transcript import fold
from tests.integration.agents.system import StartSystem
from tests.integration.agents.test_round_trips import wait_for_memory

#: What the scripted model reads in each statement (as a model would label it).
SAID = {
    "I live in Oslo.": [("I live in Oslo", "user", "states", "home", "The user lives in Oslo.")],
    "I want to know the leave policy. I use Vim.": [
        ("I want to know the leave policy", "user", "wants", "other", "The user wants the policy."),
        ("I use Vim", "user", "states", "tools", "The user uses Vim."),
    ],
    "Correction: I live in Bergen now.": [
        ("I live in Bergen now", "user", "states", "home", "The user lives in Bergen.")
    ],
}


def model(
    messages: Sequence[ChatMessage], tools: Sequence[ToolDefinition], options: LLMOptions
) -> Turn:
    if not messages[0].content.startswith("You keep a user's long-term memory"):
        return benchmark_turn(messages, tools, options)
    said = messages[-1].content.removeprefix("Message: ")
    facts = [
        {"quote": q, "about": a, "mode": m, "topic": t, "fact": f}
        for question, labelled in SAID.items()
        if said.startswith(question)
        for q, a, m, t, f in labelled
    ]
    return turn(text(json.dumps({"facts": facts})))


async def test_the_model_extractor_keeps_statements_replaces_corrections_and_skips_requests(
    start_system: StartSystem,
) -> None:
    llm = ScriptedLLM(model)
    system = await start_system(llm, memory_extractor="model")
    memories = system.stores.memories
    assert memories is not None
    apply = make_memory_applier(memories)
    for question in SAID:  # one after the other: each run's memory applied before the next
        events = await system.ask(f"{question} What is 23 × 19?")
        assert fold(events).status == "done"
        await apply(await wait_for_memory(system, events[0].run_id))
    remembered = await memories.list(Scope.user("t1", "alice"))
    assert sorted((m.topic, m.text) for m in remembered) == [
        ("home", "The user lives in Bergen."),
        ("tools", "The user uses Vim."),
    ]
