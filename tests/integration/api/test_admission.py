"""External publishers: XADD runs.questions, read the answer from the reply_to stream."""

from __future__ import annotations

import json

from agents.llm.scripted import BENCHMARK_ANSWER
from api.compose.edge import make_deps
from api.http.admission import QuestionAdmission, run_id_for
from bus import keys
from bus.commands import RunResult
from tests.support import stream_commands, wait_for


async def reply(api, stream: str, count: int = 1, within: float = 20) -> list[RunResult]:
    async def arrived() -> bool:
        return await api.redis.xlen(stream) >= count

    await wait_for(arrived, within=within)
    rows = await api.redis.xrange(stream)
    return [RunResult.model_validate_json(fields[b"data"]) for _, fields in rows]


async def test_a_question_on_the_stream_is_answered_on_reply_to(start_api) -> None:
    api = await start_api()
    key = await api.key()
    question = {"api_key": key, "question": "What is 23 × 19?", "reply_to": "crm.answers"}

    entry = await api.redis.xadd(keys.QUESTIONS_STREAM, {"data": json.dumps(question)})

    [result] = await reply(api, "crm.answers")
    assert result.status == "done" and result.answer == BENCHMARK_ANSWER
    assert result.run_id == run_id_for(entry.decode()) and result.tenant_id == "t1"


async def test_bad_entries_are_answered_and_never_block_the_next(start_api) -> None:
    api = await start_api()
    key = await api.key()
    bad = [
        {"data": "{not json"},
        {
            "data": json.dumps(
                {"api_key": "abk_0123456789ab_wrong", "question": "q", "reply_to": "r"}
            )
        },
        {"data": json.dumps({"api_key": key, "question": "", "reply_to": "r"})},
        {"other": "field"},
    ]
    for fields in bad:
        await api.redis.xadd(keys.QUESTIONS_STREAM, fields)
    await api.redis.xadd(
        keys.QUESTIONS_STREAM,
        {"data": json.dumps({"api_key": key, "question": "23 × 19?", "reply_to": "r"})},
    )

    results = await reply(api, "r", count=3)

    assert [(r.status, r.stop_reason) for r in results] == [
        ("rejected", "unauthorized"),
        ("rejected", "invalid_question"),
        ("done", None),
    ]
    pending = await api.redis.xpending(keys.QUESTIONS_STREAM, keys.ADMISSION_GROUP)
    assert pending["pending"] == 0


async def test_a_redelivered_entry_starts_no_second_run(start_api) -> None:
    api = await start_api()
    key = await api.key()
    admission = QuestionAdmission(make_deps(api.settings, api.redis, api.stores))
    fields = {b"data": json.dumps({"api_key": key, "question": "q"}).encode()}

    outcomes = [await admission.handle("1-1", fields, delivery=d) for d in (1, 2)]

    assert outcomes == ["admitted", "admitted"]
    commands = [c for c in await stream_commands(api.redis, keys.Role.INTAKE)]
    assert [c.run_id for c in commands] == [run_id_for("1-1")]
