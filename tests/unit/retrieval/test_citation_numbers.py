"""Citation numbers are unique in a run: the gateway numbers each search result from the
run's next free number, and the calling agent takes every number the gateway gave."""

from __future__ import annotations

import json
from typing import Any

from agents.roles.researcher import arrived
from bus.commands import AgentTask, Command, ToolCallResult, ToolResults, deadline_in
from bus.keys import Role
from bus.run_state import ChatMessage, RunState, ToolCall
from retrieval.citations import check_citations, refs_end, renumbered, retrieved_refs


def result(*refs: int) -> ToolCallResult:
    items = [{"ref": r, "id": f"c{r}", "source": "a.md", "title": "A", "text": "t"} for r in refs]
    return ToolCallResult(
        call_id="s1c0", name="search_docs", status="ok", code="ok",
        result={"query": "q", "results": items},
    )  # fmt: skip


def test_a_result_is_numbered_from_the_runs_next_free_number() -> None:
    results: list[dict[str, Any]] = [{"ref": 1, "id": "a"}, {"ref": 2, "id": "b"}]
    body = {"query": "q", "results": results}
    numbered, after = renumbered(body, 7)
    assert [r["ref"] for r in numbered["results"]] == [7, 8] and after == 9
    assert results[0]["ref"] == 1  # the tool's own result is not edited in place
    assert renumbered({"error": "x"}, 7) == ({"error": "x"}, 7)


def test_the_researcher_takes_every_number_the_gateway_gave() -> None:
    # A bulky result reaches the model as a cut view: it holds [9]..[12] of [9]..[28].
    state = RunState(question="q", next_ref=9)
    payload = ToolResults(results=[result(9, 10, 11, 12)], state=state, next_ref=29)
    command = Command(
        run_id="r" * 32, tenant_id="t1", subject="alice", role=Role.RESEARCHER,
        deadline=deadline_in(30),
        payload=payload,
    )  # fmt: skip
    assert refs_end(payload.results) == 13
    assert arrived(command).next_ref == 29  # the next search cannot reuse [13]..[28]
    plain = command.model_copy(update={"payload": AgentTask(state=state)})
    assert arrived(plain).next_ref == 9


def web_message(*refs: int) -> ChatMessage:
    items = [
        {"ref": r, "title": f"Page {r}", "url": f"https://e.test/{r}", "snippet": f"s{r}"}
        for r in refs
    ]
    body = {"status": "ok", "code": "ok", "result": {"query": "q", "results": items}}
    call = ToolCall(id=f"w{refs[0]}", name="web_search", arguments={"query": "q"})
    return ChatMessage.tool(call, json.dumps(body))


def test_web_results_are_numbered_and_cited_like_documents() -> None:
    item = {"ref": 3, "title": "T", "url": "https://e.test/3", "snippet": "s"}
    web = ToolCallResult(
        call_id="s2c0", name="web_search", status="ok", code="ok",
        result={"query": "q", "results": [item]},
    )  # fmt: skip
    assert refs_end([result(1, 2), web]) == 4  # one run-wide sequence

    shown = retrieved_refs([web_message(3, 4)])
    checked = check_citations("Both say so [3][4], not [5].", shown)

    assert checked.answer == "Both say so [3][4], not." and checked.stripped == 1
    assert [(c.ref, c.source, c.title, c.source_kind) for c in checked.citations] == [
        (3, "https://e.test/3", "Page 3", "web"),
        (4, "https://e.test/4", "Page 4", "web"),
    ]
    # A result the tool failed, or an item without its URL, backs nothing.
    bad = ChatMessage.tool(
        ToolCall(id="w9", name="web_search"),
        json.dumps({"status": "ok", "result": {"results": [{"ref": 9, "title": "x"}]}}),
    )
    assert retrieved_refs([bad]) == {}
