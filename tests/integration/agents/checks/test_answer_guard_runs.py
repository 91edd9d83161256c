"""A run never ends with a tool's error or a runaway: it says what it could not do, and
what clients were streamed folds to the stored answer (scripted model, real Redis)."""

from __future__ import annotations

from collections.abc import Sequence

from agents.llm.local_prompts import EXAMPLES
from agents.llm.ports import ChatMessage, LLMEvent, LLMOptions, TextDelta, ToolDefinition
from agents.llm.scripted import ScriptedLLM, text, tool_call, turn
from bus.events import DraftSuperseded, ToolResult
from bus.store import Scope
from bus.transcript import fold
from tests.integration.agents.events import final, of_type, only
from tests.integration.agents.system import StartSystem

ALICE = Scope.user("t1", "alice")
ECHO = "2+*3 is not valid arithmetic syntax (fix the argument and call the tool again)"
WORDS = (
    "I couldn't answer this: the calculator tool refused `2+*3` "
    "(the expression is not valid arithmetic syntax)."
)


async def test_a_model_that_echoes_the_tools_error_ends_the_run_with_what_failed(
    start_system: StartSystem,
) -> None:
    llm = ScriptedLLM([turn(tool_call("calculator", {"expression": "2+*3"})), turn(text(ECHO))])
    system = await start_system(llm)
    events = await system.ask("What is 2 plus times 3?")

    [result] = of_type(events, ToolResult)
    assert (result.status, result.code) == ("error", "invalid_argument")
    assert only(events, DraftSuperseded).reason == "the draft repeated a tool's error"
    done = final(events)
    assert (done.status, done.answer) == ("done", WORDS)
    assert fold(events).answer == WORDS  # what was streamed is what is stored
    run = await system.stores.runs.get(ALICE, events[0].run_id)
    assert run is not None and run.answer == WORDS


async def test_a_model_that_hands_on_the_gateways_json_ends_the_run_with_words(
    start_system: StartSystem,
) -> None:
    def echo(
        messages: Sequence[ChatMessage], tools: Sequence[ToolDefinition], options: LLMOptions
    ) -> list[LLMEvent]:
        if messages[-1].role == "tool":  # the raw payload, as the 0.5B wrote it
            return turn(text(messages[-1].content))
        return turn(tool_call("calculator", {"expression": "2+*3"}))

    system = await start_system(ScriptedLLM(echo))
    events = await system.ask("What is 2 plus times 3?")
    assert only(events, DraftSuperseded).reason == "the draft was a tool's raw output"
    assert final(events).answer == WORDS == fold(events).answer


async def test_a_model_that_writes_nothing_after_its_tool_ends_the_run_with_words(
    start_system: StartSystem,
) -> None:
    # The 0.5B, asked about Python with documents ingested, called a tool and then wrote
    # nothing: the run ended done with an empty answer.
    llm = ScriptedLLM([turn(tool_call("calculator", {"expression": "2+3"})), turn()])
    system = await start_system(llm)
    events = await system.ask("How do I keep a list's order without duplicates?")
    assert only(events, DraftSuperseded).reason == "the draft was empty"
    expected = (
        "I couldn't answer this: I called the calculator tool with `2+3`, "
        "but I did not turn its result into an answer."
    )
    assert final(events).answer == expected == fold(events).answer


async def test_a_runaway_answer_is_stopped_and_said_in_words(start_system: StartSystem) -> None:
    runaway = turn(text("The total is 1"), [TextDelta(text="000")] * 2000)
    llm = ScriptedLLM([runaway])
    system = await start_system(llm)
    events = await system.ask("How much is it?", use_tools=False)

    streamed = "".join(e.delta for e in events if e.type == "answer")
    assert streamed.count("0") < 200  # stopped at once, not at the token cap
    expected = "I couldn't answer this: my reply began repeating “0” without end, so I stopped it."
    assert final(events).answer == expected
    assert fold(events).answer == expected


async def test_an_answer_after_a_tool_error_that_explains_it_streams_unchanged(
    start_system: StartSystem,
) -> None:
    own = "I can't compute 2+*3: two operators in a row are not valid arithmetic."
    llm = ScriptedLLM([turn(tool_call("calculator", {"expression": "2+*3"})), turn(text(own))])
    system = await start_system(llm)
    events = await system.ask("What is 2 plus times 3?")
    assert not of_type(events, DraftSuperseded)
    assert final(events).answer == own == fold(events).answer


async def test_the_prompts_example_answer_to_another_question_is_said_in_words(
    start_system: StartSystem,
) -> None:
    # The 0.5B answered a question about writing a regular expression with the decision
    # prompt's example answer, and a request for a joke with its example's arithmetic.
    system = await start_system(ScriptedLLM([turn(text(EXAMPLES[0]))]))
    events = await system.ask("How do I read a file line by line in Go?", use_tools=False)
    assert only(events, DraftSuperseded).reason == "the draft repeated the prompt"
    expected = "I couldn't answer this: my reply repeated my own instructions instead of answering."
    assert final(events).answer == expected == fold(events).answer


async def test_the_prompts_example_arithmetic_to_a_greeting_is_said_in_words(
    start_system: StartSystem,
) -> None:
    system = await start_system(ScriptedLLM([turn(text("(12 * 7) = 84."))]))
    events = await system.ask("Good morning! Could you tell me a riddle?", use_tools=False)
    assert only(events, DraftSuperseded).reason == "the draft repeated the prompt"
