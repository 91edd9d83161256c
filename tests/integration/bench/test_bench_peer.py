"""`agentbus bench peer`'s LangGraph side: the same turn as agentbus's, every run answered.

Tiny run counts; the figures are not checked (speed is for the benchmark itself), only that
each run streamed the whole 40-token answer with 437 in it, after the calculator's result,
the critic's OK and the verifier's pass, with either saver; and that an unreachable
Postgres makes its row skipped rather than failing the benchmark.
"""

from __future__ import annotations

import json
import uuid

import psycopg
from langchain_core.messages import ToolMessage
from langgraph.checkpoint.memory import InMemorySaver

from agentbus_bench.peer import POSTGRES, drive, measure_langgraph, postgres_saver
from agentbus_bench.peer_graph import ANSWER_TOKENS, ask, build_graph


async def test_a_langgraph_run_streams_the_answer_after_the_tool_and_both_judges() -> None:
    graph = build_graph(InMemorySaver())
    thread = uuid.uuid4().hex

    answer = await ask(graph, thread)

    assert len(answer.tokens) == ANSWER_TOKENS == 40
    assert "437" in "".join(answer.tokens)
    state = (await graph.aget_state({"configurable": {"thread_id": thread}})).values
    tool_results = [m for m in state["messages"] if isinstance(m, ToolMessage)]
    assert [json.loads(str(m.content))["result"] for m in tool_results] == [437]
    assert state["plan"].startswith("- Multiply 23 by 19")
    assert state["critique"]["verdict"] == "OK"
    assert state["verdict"]["verdict"] == "pass"


async def test_every_run_of_the_in_memory_phase_gets_the_whole_answer() -> None:
    figures = await drive(build_graph(InMemorySaver()), runs=20, concurrency=4)

    assert figures["runs"] == 20
    assert figures["runs_wrong"] == 0
    assert figures["runs_per_s"] > 0
    assert figures["p50_ms"] > 0


async def test_every_run_of_the_postgres_phase_gets_the_whole_answer_and_is_checkpointed(
    postgres_database: str,
) -> None:
    # A database of its own beside the session's: LangGraph's saver makes a `checkpoints`
    # table, and the session's database holds agentbus's own of that name.
    url = postgres_database.rpartition("/")[0] + "/agentbus_test_bench_peer"
    async with postgres_saver(url, 4) as (saver, server_pids):
        figures = await drive(build_graph(saver), runs=5, concurrency=2)
        assert server_pids

    assert figures["runs_wrong"] == 0
    async with await psycopg.AsyncConnection.connect(url) as conn:
        found = await conn.execute("SELECT count(DISTINCT thread_id) FROM checkpoints")
        row = await found.fetchone()
    # The warm-up (5) and the runs one at a time (5), then the 5 under load: a thread each.
    assert row == (15,)


def test_an_unreachable_postgres_skips_its_row_with_the_reason() -> None:
    row = measure_langgraph(
        POSTGRES, runs=1, concurrency=1, postgres_url="postgresql://postgres@127.0.0.1:1/x"
    )

    assert row.keys() == {"skipped"}
    assert "Postgres not reachable at postgresql://postgres@127.0.0.1:1/x" in row["skipped"]
