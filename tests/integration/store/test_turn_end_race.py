"""A conversation's first run ends while its next question is admitted on another connection
(two processes on Postgres): the question runs, it does not queue behind the ended run.

The first turn of a conversation is Redis's (`bus.first_turns`): SQL has no turn and no
lock row for it. The run's end takes the conversation's lock by writing that row; an
admission that comes while the end is under way waits for its commit, then finds the
run ended and does not adopt its turn. Had the end locked nothing, the admission would
read the run's row before the end wrote it, adopt the run as running and queue the
question behind a turn no end closes (until the sweeper's pass, up to 45 s later).

The end is held half way by a third connection that locks the conversation's row (the
end appends the question and answer to it); what waits on what is read from
``pg_stat_activity``, so nothing here depends on timing.
"""

from __future__ import annotations

import asyncio
import time

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from bus.store import ConversationStore, Exchange, RunRecord, RunStore, Scope, make_engine
from bus.store.turn_types import Admission, FirstTurn, TurnState
from bus.store.turns import TurnStore
from tests.integration.conftest import as_asyncpg
from tests.support import wait_for

pytestmark = pytest.mark.postgres

ALICE = Scope.user("tenant-a", "alice")
WAITING = (
    "SELECT count(*) FROM pg_stat_activity"
    " WHERE datname = current_database() AND wait_event_type = 'Lock'"
)


async def test_a_question_admitted_while_the_first_run_ends_does_not_queue_behind_it(
    postgres_migrated_url: str, postgres_database: str
) -> None:
    ending, admitting = make_engine(postgres_migrated_url), make_engine(postgres_migrated_url)
    superuser = make_engine(as_asyncpg(postgres_database))  # row-level security does not bind
    try:
        runs, turns = RunStore(ending), TurnStore(admitting)
        await ConversationStore(ending).ensure(ALICE, "conv-1", "q1")
        await runs.create(
            RunRecord(id="run-1", tenant_id="tenant-a", subject="alice", mode="single",
                      question="q1")
        )  # fmt: skip
        first = FirstTurn("run-1", "tenant-a", "alice", "q1", 60.0, time.time() + 60)

        async with superuser.connect() as holder:
            await holder.begin()
            await holder.execute(text("SELECT 1 FROM conversations WHERE id = 'conv-1' FOR UPDATE"))
            exchange = Exchange(conversation_id="conv-1", question="q1", answer="a1")
            end = asyncio.create_task(
                runs.end_answered(ALICE, "run-1", exchange, trace=[], usage={})
            )
            await wait_for(lambda: _waiting(superuser, 1))  # the end, held half way
            question = turns.admit(
                ALICE, "conv-1", "run-2", "q2", publish='{"run": "run-2"}', timeout_s=60,
                policy="enqueue", mode="single", first=first,
            )  # fmt: skip
            admission: asyncio.Task[Admission] = asyncio.create_task(question)

            async def settled() -> bool:  # admitted already, or waiting for the end
                return admission.done() or await _waiting(superuser, 2)

            await wait_for(settled)
            await holder.rollback()  # the end goes on
        ended, admitted = await end, await admission

        assert ended.next is None and ended.asked is not None
        assert (admitted.state, admitted.ahead) == (TurnState.RUNNING, 0)
        live = await turns.waiting(ALICE, "conv-1", first)
        assert [(t.run_id, t.state) for t in live] == [("run-2", TurnState.RUNNING)]
    finally:
        for engine in (ending, admitting, superuser):
            await engine.dispose()


async def _waiting(superuser: AsyncEngine, backends: int) -> bool:
    """Whether at least ``backends`` connections of the database wait on a lock."""
    async with superuser.connect() as conn:
        return int((await conn.execute(text(WAITING))).scalar_one()) >= backends
