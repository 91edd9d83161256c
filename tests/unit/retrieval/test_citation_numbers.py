"""Citation numbers are unique in a run: the gateway numbers each search result from the
run's next free number, and the calling agent takes every number the gateway gave."""

from __future__ import annotations

from typing import Any

from agents.researcher import arrived
from bus.commands import AgentTask, Command, ToolCallResult, ToolResults, deadline_in
from bus.keys import Role
from bus.run_state import RunState
from retrieval.citations import refs_end, renumbered


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
