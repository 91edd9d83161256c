"""A declared agent's answer is judged as the researcher's is: a tool's payload or a
runaway is said in words, invented citations are dropped as they stream, a run that asks
for a JSON answer gets one, and a structured output its schema refuses is asked for once
more (scripted model, real Redis)."""

from __future__ import annotations

import json
from collections.abc import Sequence

from agents.llm.ports import ChatMessage, LLMEvent, LLMOptions, TextDelta, ToolDefinition
from agents.llm.scripted import ScriptedLLM, text, tool_call, turn
from bus.events import DraftSuperseded, ToolResult
from bus.store import Scope
from bus.team_run import PinnedTeam
from bus.transcript import fold
from tests.integration.agents.events import final, of_type, only
from tests.integration.agents.system import StartSystem
from tests.integration.agents.teams.examples import pinned, team_turn, who

WORDS = (
    "I couldn't answer this: the calculator tool refused `2+*3` "
    "(the expression is not valid arithmetic syntax)."
)


def _one_agent(tools: list[str] | None = None) -> PinnedTeam:
    agent: dict[str, object] = {"name": "solo", "instructions": "Answer the question."}
    if tools:
        agent["tools"] = tools
    return PinnedTeam(
        name="solo",
        version=1,
        document={
            "agents": [agent],
            "edges": [
                {"from": "intake", "on": "admitted", "to": "solo"},
                {"from": "solo", "on": "answer", "to": "finalizer"},
            ],
        },
    )


async def test_a_declared_agent_that_hands_on_the_gateways_json_ends_the_run_with_words(
    start_system: StartSystem,
) -> None:
    def echo(
        messages: Sequence[ChatMessage], tools: Sequence[ToolDefinition], options: LLMOptions
    ) -> list[LLMEvent]:
        if messages[-1].role == "tool":  # the raw payload handed on as the answer
            return turn(text(messages[-1].content))
        return turn(tool_call("calculator", {"expression": "2+*3"}))

    system = await start_system(ScriptedLLM(echo))
    events = await system.ask("What is 2 plus times 3?", team=_one_agent(["calculator"]))

    superseded = only(events, DraftSuperseded)
    assert (superseded.agent, superseded.reason) == ("solo", "the draft was a tool's raw output")
    assert final(events).answer == WORDS == fold(events).answer


async def test_a_declared_agents_runaway_is_stopped_and_said_in_words(
    start_system: StartSystem,
) -> None:
    llm = ScriptedLLM([turn(text("The total is 1"), [TextDelta(text="000")] * 2000)])
    system = await start_system(llm)
    events = await system.ask("How much is it?", team=_one_agent())

    streamed = "".join(e.delta for e in events if e.type == "answer")
    assert streamed.count("0") < 200  # stopped at once, not at the token cap
    expected = "I couldn't answer this: my reply began repeating “0” without end, so I stopped it."
    assert final(events).answer == expected == fold(events).answer


async def test_a_declared_agent_cites_only_what_the_run_showed_it(
    start_system: StartSystem,
) -> None:
    llm = ScriptedLLM([turn(text("Paris is the capital [4]."))])
    system = await start_system(llm)
    events = await system.ask("What is the capital of France?", team=_one_agent())

    done = final(events)
    assert done.status == "done" and "[4]" not in (done.answer or "")
    assert done.answer == fold(events).answer  # the marker never reached a client


async def test_a_team_run_that_asks_for_json_gets_its_answer_under_the_schema(
    start_system: StartSystem,
) -> None:
    schema = {"type": "object", "properties": {"city": {"type": "string"}}}
    document = json.dumps({"city": "Paris", "refs": "[4]"})
    llm = ScriptedLLM([turn(text(document))])
    system = await start_system(llm)
    events = await system.ask("Capital of France?", team=_one_agent(), answer_schema=schema)

    assert llm.requests[0][2].response_schema == schema
    assert final(events).answer == document  # a [4] in a document is data, kept as written


async def test_a_structured_agent_whose_reply_the_schema_refuses_is_asked_once_more(
    start_system: StartSystem,
) -> None:
    replies = iter(["It is technical, I think.", json.dumps({"category": "technical"})])

    def script(
        messages: Sequence[ChatMessage], tools: Sequence[ToolDefinition], options: LLMOptions
    ) -> list[LLMEvent]:
        if who(messages) == "triage":
            return turn(text(next(replies)))
        return team_turn(messages, tools, options)

    llm = ScriptedLLM(script)
    system = await start_system(llm)
    events = await system.ask("My router keeps dropping the line.", team=pinned("triage"))

    assert final(events).answer == "Restart the router, then check the cable."
    assert [who(r[0]) for r in llm.requests] == ["triage", "triage", "technical"]
    again = llm.requests[1][0]
    assert again[-2].content == "It is technical, I think."
    assert again[-1].content.startswith("That reply is not a JSON object valid under your")
    run = await system.stores.runs.get(Scope.user("t1", "alice"), events[0].run_id)
    assert run is not None and (run.usage or {})["triage_tokens"] > 0


async def test_the_gateway_holds_a_declared_agent_to_the_tools_it_lists(
    start_system: StartSystem,
) -> None:
    def script(
        messages: Sequence[ChatMessage], tools: Sequence[ToolDefinition], options: LLMOptions
    ) -> list[LLMEvent]:
        if messages[-1].role != "tool":  # a tool the team did not give it, by name
            return turn(tool_call("current_time", {}))
        return turn(text("I could not read the clock."))

    llm = ScriptedLLM(script)
    system = await start_system(llm)
    events = await system.ask("What time is it?", team=_one_agent(["calculator"]))

    [result] = of_type(events, ToolResult)
    assert (result.tool, result.code) == ("current_time", "permission_denied")
    assert "its tools are: calculator" in (result.message or "")
    assert final(events).status == "done"
