"""What the end of a conversation's run costs when a question waits behind it: the run's
end, its question and answer, its turn's end and the hand-over to the waiting question.

Not a timing test: the counts are what the finalizer's step and the run-end hook ask of
the store and of Redis (`tests.integration.agents.round_trips`), whatever the host's load.
The budget is numbers; it only comes down. A change that needs more raises it in its own
commit and says why.
"""

from __future__ import annotations

from typing import Any

from tests.held_model import HeldModel
from tests.integration.agents.round_trips import counting
from tests.integration.api.conftest import Api, StartApi
from tests.integration.api.multitask import ended, events_of, first_run_streaming, post, slow_model

#: Two ends of runs in one conversation, the first handing the turn to the second, which
#: waited: (SQL statements, Redis commands, Redis round trips) of the finalizer role. Each
#: end is one transaction: the conversation's lock; the question and the answer appended
#: (the conversation's active message read, the question's parent checked when it names
#: one, both inserted, the conversation moved on once); the run's row; its turn ended;
#: the waiting turn promoted, in one statement that finds nothing for the second end.
#: Redis, each: the run's events (its trace), the step's commit, the fair-share tick, the
#: concurrent-run slot given back; the first end also publishes the waiting question (the
#: publish-once script).
BUDGET = (17, 9, 9)


async def two_turns(api: Api, model: HeldModel, key: str) -> tuple[list[dict[str, Any]], int]:
    """A conversation's first question and one that waits behind it, both ended; how many
    times the second started."""
    model.hold()
    q1, conversation = await first_run_streaming(api, key)
    q2 = (await post(api, key, "q2", conversation)).json()
    model.release()
    assert q2["queued"] is True
    runs = [await ended(api, key, q1), await ended(api, key, q2["run_id"])]
    started = [e["type"] for e in await events_of(api, q2["run_id"])].count("run_started")
    return runs, started


async def test_a_runs_end_that_hands_its_turn_on_costs_no_more_than_its_budget(
    start_api: StartApi,
) -> None:
    model = slow_model()
    api = await start_api(model, api_rate_per_minute=0, api_max_active_runs=0)
    key = await api.key()
    await two_turns(api, model, key)  # warmed: scripts loaded, caches filled
    with counting() as costs:
        runs, started = await two_turns(api, model, key)
    assert [r["status"] for r in runs] == ["done", "done"] and started == 1

    spent = costs.of(("finalizer",))["finalizer"]
    detail = f"{spent} {dict(costs.redis_names['finalizer'])} {costs.sql_text['finalizer']}"
    print(detail)  # shown with -s, and on a failure
    assert all(got <= most for got, most in zip(spent, BUDGET, strict=True)), detail
