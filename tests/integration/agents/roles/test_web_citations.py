"""Web results are numbered in the run's one sequence and cited and checked like documents."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import pytest

from agents.llm.ports import ChatMessage, LLMEvent, LLMOptions, ToolDefinition
from agents.llm.scripted import ScriptedLLM, text, tool_call, turn
from bus.events import Citations
from gateway.registry import ToolRegistry
from gateway.tools import WebSearch, builtin_tools
from tests.integration.agents.events import final, of_type
from tests.integration.agents.system import StartSystem
from tests.unit.gateway.local_http import OVERRIDE, PUBLIC_IP, FakeResolver, LocalServer, serve
from tests.unit.gateway.test_web_tools import DDG_PAGE


@pytest.fixture
def server() -> Iterator[LocalServer]:
    yield from serve(LocalServer(), None)


def searching_then_citing() -> ScriptedLLM:
    def script(
        messages: Sequence[ChatMessage], tools: Sequence[ToolDefinition], options: LLMOptions
    ) -> list[LLMEvent]:
        if messages[-1].role != "tool":
            return turn(tool_call("web_search", {"query": "python docs"}))
        return turn(text("The docs are at python.org [1], and the PEPs too [2]. Not [7]."))

    return ScriptedLLM(script)


async def test_a_cited_web_result_is_kept_with_its_page_as_the_source(
    start_system: StartSystem, server: LocalServer
) -> None:
    server.route("/html/", body=DDG_PAGE, content_type="text/html; charset=utf-8")
    search = WebSearch(f"http://html.duckduckgo.com:{server.port}/html/")
    registry = ToolRegistry([*(t for t in builtin_tools() if t.spec.name != "web_search"), search])
    system = await start_system(
        searching_then_citing(),
        registry=registry,
        resolver=FakeResolver({"html.duckduckgo.com": [PUBLIC_IP]}),
        connect_override=OVERRIDE,
        egress_enabled=True,
        allowed_egress_hosts="html.duckduckgo.com",
    )
    events = await system.ask("Where are the Python docs?", approve_high_risk=True)

    done = final(events)
    [cited] = of_type(events, Citations)
    assert done.status == "done", events[-3:]
    assert done.answer == "The docs are at python.org [1], and the PEPs too [2]. Not."
    assert cited.stripped == 1
    assert [(c.ref, c.source, c.title, c.source_kind) for c in cited.items] == [
        (1, "https://www.python.org/doc/", "Python Documentation", "web"),
        (2, "https://peps.python.org/", "PEPs", "web"),
    ]
