"""What one run costs in SQL statements and Redis commands, per role, against a budget.

Not a timing test: the counts are what the code asks of the store and of Redis, whatever
the host's load. The budgets are numbers; they only come down. A change that needs more
raises them in its own commit and says why.

The run is the benchmark turn (`agentbus bench turn`) with the scripted model: single
mode (calculator call, answer) and multi accurate (plan, tool call, critique, verdict).
Each run is measured after a first run of the same shape, so the counts are a warmed
process's, as under load (caches filled, groups made).
"""

from __future__ import annotations

import pytest

from agents.llm.scripted import BENCHMARK_ANSWER, ScriptedLLM
from bus.ledger import LedgerRecord
from bus.transcript import fold
from tests.integration.agents.roles.test_memory_kill import memory_records
from tests.integration.agents.round_trips import NO_ROLE, Costs, counting
from tests.integration.agents.system import StartSystem, System
from tests.support import wait_for


async def wait_for_memory(system: System, run_id: str) -> list[LedgerRecord]:
    """The memory records the run's memory step committed, once it has."""

    async def found() -> list[LedgerRecord]:
        return await memory_records(system.redis, run_id)

    # The rules' first reading loads their language data in a thread: seconds on a busy host.
    await wait_for(found, within=60)
    return await found()


#: The roles that must never touch SQL (the store is written at admission, at a pause, at
#: the end and by the audit recorder).
STEP_ROLES = ("planner", "researcher", "critic", "verifier", "gateway")
#: What a run may cost, per role: (SQL statements, Redis commands, Redis round trips).
#: The intake: its commit (whether its user is being erased, `bus.fence`, is known from the
#: fence epoch its worker read with the step's entry, `bus.epochs`). The researcher: per
#: step its commit (which charges its model calls: no budget limits the run); the settings
#: version its tenant's tools are cached at is known from the settings epoch read with the
#: entry (`bus.tenant_versions`). The planner, the critic and the verifier: their commit.
#: The gateway: its commit, which also shows the calculator's `tool_call` (its result was
#: in before the event's own write began). The finalizer: the run's events (its trace),
#: its commit, the fair-share tick, the concurrent-run slot given back, and the run's end
#: in SQL. The epochs' reads ride the workers' reads of their streams (charged to `-`).
BUDGETS: dict[str, dict[str, tuple[int, int, int]]] = {
    "single": {
        "intake": (1, 1, 1),
        "researcher": (0, 2, 2),
        "gateway": (0, 1, 1),
        "finalizer": (1, 4, 4),
    },
    "multi": {
        "intake": (1, 1, 1),
        "planner": (0, 1, 1),
        "researcher": (0, 2, 2),
        "gateway": (0, 1, 1),
        "critic": (0, 1, 1),
        "verifier": (0, 1, 1),
        "finalizer": (1, 4, 4),
    },
}


def _report(title: str, costs: Costs) -> str:
    lines = [title]
    for role in sorted(set(costs.sql) | set(costs.redis)):
        names = dict(costs.redis_names[role])
        lines.append(
            f"  {role:10} sql={costs.sql[role]} redis={costs.redis[role]} "
            f"trips={costs.redis_trips[role]} {names} {costs.sql_text[role]}"
        )
    return "\n".join(lines)


@pytest.mark.parametrize(
    ("mode", "accuracy"), [("single", "standard"), ("multi", "accurate")], ids=["single", "multi"]
)
async def test_a_run_costs_no_more_than_its_budget(
    start_system: StartSystem, mode: str, accuracy: str
) -> None:
    system = await start_system(ScriptedLLM(record=False))
    await system.ask("What is 23 × 19?", mode=mode, accuracy=accuracy, verifier_check=False)
    with counting() as costs:  # warmed: caches filled, groups made
        events = await system.ask(
            "What is 23 × 19?", mode=mode, accuracy=accuracy, verifier_check=False
        )
    transcript = fold(events)
    assert transcript.status == "done" and transcript.answer == BENCHMARK_ANSWER
    print(_report(f"{mode} {accuracy}", costs))  # shown with -s, and on a failure

    budget = BUDGETS[mode]
    spent = {r: c for r, c in costs.of(tuple(costs.sql | costs.redis)).items() if r != NO_ROLE}
    assert set(spent) <= set(budget), f"roles with no budget: {set(spent) - set(budget)}"
    for role, (sql, commands, trips) in spent.items():
        allowed = budget[role]
        within = all(got <= most for got, most in zip((sql, commands, trips), allowed, strict=True))
        assert within, f"{role} cost sql={sql} redis={commands} trips={trips}, budget {allowed}"
    assert all(costs.sql[r] == 0 for r in STEP_ROLES), {r: costs.sql_text[r] for r in STEP_ROLES}
    # Nothing the run needs is left out: the memory step only runs for a statement.
    assert "memory" not in spent


async def test_a_question_that_states_something_about_its_user_gets_its_memory_step(
    start_system: StartSystem,
) -> None:
    system = await start_system(ScriptedLLM(record=False))
    await system.ask("What is 23 × 19?")
    with counting() as costs:
        events = await system.ask("I work in the Lisbon office. What is 23 × 19?")
        assert fold(events).status == "done"
        memories = await wait_for_memory(system, events[0].run_id)
    assert costs.sql["memory"] == 0  # the tenant's preference comes from the cache
    assert [m.data["text"] for m in memories] == ["The user works in the Lisbon office."]
