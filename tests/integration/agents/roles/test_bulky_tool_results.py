"""Large tool output never kills a run (issue 14, item 8): a bulky result is kept whole in
a run blob and the model reads a bounded view marked as cut, so no command outgrows the
message budget."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

import pytest

from agents.llm.ports import ChatMessage, LLMOptions, ToolDefinition
from agents.llm.scripted import ScriptedLLM, text, tool_call, turn
from gateway.ports import EgressClient
from gateway.registry import ToolRegistry
from gateway.spec import ToolSpec
from gateway.tools import builtin_tools
from gateway.worker import VIEW_BYTES
from tests.integration.agents.events import final
from tests.integration.agents.system import StartSystem
from tests.unit.gateway.local_http import OVERRIDE, PUBLIC_IP, FakeResolver, LocalServer, serve

PAGE = ("€" * 99 + " ") * 1_000  # 100,000 characters, ~300 KB of UTF-8


class BulkSearch:
    """A search tool whose every answer fills the search tools' 32 KB output cap."""

    spec = ToolSpec(
        name="bulk_search",
        description="Search; returns many long results.",
        input_schema={"type": "object", "properties": {"q": {"type": "string"}}},
        output_schema={"type": "object"},
        max_output_bytes=32_768,
    )

    async def run(self, args: dict[str, Any], net: EgressClient | None) -> dict[str, Any]:
        hits = [{"title": f"hit {i}", "text": f"{args.get('q')} " + "x" * 4000} for i in range(9)]
        return {"results": hits}


@pytest.fixture
def site() -> Iterator[LocalServer]:
    yield from serve(LocalServer(), None)


def answering(first: list[Any]) -> ScriptedLLM:
    """Calls the tools in ``first``, then answers from what it read."""

    def script(
        messages: Sequence[ChatMessage], tools: Sequence[ToolDefinition], options: LLMOptions
    ):
        if messages[-1].role == "tool":
            return turn(text("I read the results."))
        return turn(first)

    return ScriptedLLM(script)


async def test_a_250_kb_fetch_ends_done_and_the_model_reads_a_marked_view(
    start_system: StartSystem, site: LocalServer
) -> None:
    site.route("/big", body=PAGE, content_type="text/plain; charset=utf-8")
    url = f"http://big.test:{site.port}/big"
    llm = answering([tool_call("http_fetch", {"url": url, "max_chars": 100_000})])
    system = await start_system(
        llm,
        egress_enabled=True,
        allowed_egress_hosts="big.test",
        resolver=FakeResolver({"big.test": [PUBLIC_IP]}),
        connect_override=OVERRIDE,
    )
    events = await system.ask("Read the big page.", approve_high_risk=True)
    assert events[-1].type == "done" and final(events).status == "done", events[-3:]
    [result] = [e for e in events if e.type == "tool_result"]
    # The client event carries a marked view too: every watcher receives it, the trace keeps it.
    assert result.status == "ok" and result.truncated and "this event shows" in result.message
    assert len(json.dumps({"result": result.result}, ensure_ascii=False).encode()) <= VIEW_BYTES
    assert result.result["text"].endswith("…[truncated]")

    seen = json.loads(llm.requests[-1][0][-1].content)
    assert seen["truncated"] is True and "this view is cut" in seen["message"]
    assert len(json.dumps(seen["result"], ensure_ascii=False).encode()) <= VIEW_BYTES
    assert seen["result"]["text"].endswith("…[truncated]")


async def test_ten_full_search_results_in_one_run_end_done(start_system: StartSystem) -> None:
    calls = [tool_call("bulk_search", {"q": f"query {i}"}) for i in range(10)]
    llm = answering(calls)
    registry = ToolRegistry([*builtin_tools(), BulkSearch()])
    system = await start_system(llm, registry=registry)
    events = await system.ask("Search ten times.")
    assert events[-1].type == "done" and final(events).status == "done", events[-3:]
    results = [e for e in events if e.type == "tool_result"]
    assert len(results) == 10 and all(e.status == "ok" for e in results)
    thread = llm.requests[-1][0]
    assert sum(m.role == "tool" for m in thread) == 10
    blobs = [key async for key in system.redis.scan_iter(match="*tool-result:*")]
    assert len(blobs) == 10
    whole = json.loads(await system.redis.get(blobs[0]))
    assert len(whole["results"]) == 9  # the whole result, not the view
