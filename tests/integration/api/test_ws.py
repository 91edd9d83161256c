"""The websocket edge against a real server: ask, rejoin, cancel, limits of a connection."""

from __future__ import annotations

import json
from typing import Any

import pytest
from websockets.exceptions import ConnectionClosed, InvalidStatus

from agents.llm.scripted import BENCHMARK_ANSWER, ScriptedLLM
from api.app.access import owner_value
from bus import keys, wire
from bus.events import Answer, RunStarted
from tests.integration.api.conftest import Api, StartApi, recv, until_done


def ids_of(frames: list[dict[str, Any]]) -> list[str]:
    return [f["id"] for f in frames if "id" in f]


async def stream_ids(api: Api, run_id: str) -> list[str]:
    rows = await api.redis.xrange(keys.run_events(run_id, 0))
    return [entry_id.decode() for entry_id, _ in rows]


async def test_ask_streams_live_events_until_done(start_api: StartApi) -> None:
    api = await start_api()
    key = await api.key()
    conn = await api.ws(key)

    await conn.send(json.dumps({"type": "ask", "question": "What is 23 × 19?", "request_id": "q1"}))
    accepted = await recv(conn)
    frames = await until_done(conn)

    assert accepted["type"] == "accepted" and accepted["request_id"] == "q1"
    run_id = accepted["run_id"]
    assert frames[0]["type"] == "run_started"
    assert {"tool_call", "tool_result", "answer"} <= {f["type"] for f in frames}
    assert all(f["run_id"] == run_id for f in frames)
    assert ids_of(frames) == await stream_ids(api, run_id)
    assert "".join(f["delta"] for f in frames if f["type"] == "answer") == BENCHMARK_ANSWER
    assert frames[-1]["status"] == "done"
    run = (await api.http.get(f"/api/v1/runs/{run_id}", headers=api.auth(key))).json()
    assert run["status"] == "done" and run["answer"] == BENCHMARK_ANSWER
    assert run["usage"] and run["trace"][0]["type"] == "run_started"


async def test_rejoining_with_the_last_id_has_no_gap_and_no_duplicate(start_api: StartApi) -> None:
    api = await start_api(ScriptedLLM(token_delay=0.02))
    key = await api.key()
    first = await api.ws(key)
    await first.send(json.dumps({"type": "ask", "question": "What is 23 × 19?"}))
    run_id = (await recv(first))["run_id"]
    seen: list[dict[str, Any]] = []
    while sum(f["type"] == "answer" for f in seen) < 3:  # mid-answer
        seen.append(await recv(first))
    await first.close()

    second = await api.ws(key)
    await second.send(
        json.dumps({"type": "join", "run_id": run_id, "last_event_id": seen[-1]["id"]})
    )
    rest = await until_done(second)

    assert ids_of(seen) + ids_of(rest) == await stream_ids(api, run_id)
    answer = "".join(f["delta"] for f in seen + rest if f["type"] == "answer")
    assert answer == BENCHMARK_ANSWER


async def test_cancel_stops_a_streaming_answer(start_api: StartApi) -> None:
    api = await start_api(ScriptedLLM(token_delay=0.05))
    key = await api.key()
    conn = await api.ws(key)
    await conn.send(json.dumps({"type": "ask", "question": "What is 23 × 19?"}))
    run_id = (await recv(conn))["run_id"]
    while (await recv(conn))["type"] != "answer":
        pass

    await conn.send(json.dumps({"type": "cancel", "run_id": run_id, "request_id": "c"}))
    frames = await until_done(conn)

    assert {"type": "cancel_requested", "run_id": run_id, "request_id": "c"} in frames
    assert frames[-1]["status"] == "cancelled"
    answer = "".join(f["delta"] for f in frames if f["type"] == "answer")
    assert len(answer) < len(BENCHMARK_ANSWER) / 2  # stopped while streaming
    run = (await api.http.get(f"/api/v1/runs/{run_id}", headers=api.auth(key))).json()
    assert run["status"] == "cancelled"


async def test_a_join_whose_events_were_trimmed_gets_a_snapshot(start_api: StartApi) -> None:
    api = await start_api()
    key = await api.key()
    conn = await api.ws(key)
    await conn.send(json.dumps({"type": "ask", "question": "What is 23 × 19?"}))
    run_id = (await recv(conn))["run_id"]
    frames = await until_done(conn)
    stream = keys.run_events(run_id, 0)
    await api.redis.xtrim(stream, maxlen=1, approximate=False)  # only `done` is left

    await conn.send(
        json.dumps({"type": "join", "run_id": run_id, "last_event_id": frames[0]["id"]})
    )
    snapshot = await recv(conn)

    assert snapshot["type"] == "snapshot" and snapshot["last_event_id"] == frames[-1]["id"]
    assert snapshot["run"]["status"] == "done" and snapshot["run"]["answer"] == BENCHMARK_ANSWER


async def test_a_client_too_slow_is_cut_off_with_where_to_resume(start_api: StartApi) -> None:
    api = await start_api(ws_buffer_events=10)
    key = await api.key()
    run_id, stream = "slowrun", keys.run_events("slowrun", 0)
    await api.redis.set(keys.run_owner(run_id, 0), owner_value("t1", "alice"))
    for i in range(40):  # more than the buffer, delivered in one read
        event = (
            RunStarted(run_id=run_id, question="q") if i == 0 else Answer(run_id=run_id, delta="x")
        )
        await api.redis.xadd(stream, {wire.DATA_FIELD: wire.encode(event)})
    conn = await api.ws(key)

    await conn.send(json.dumps({"type": "join", "run_id": run_id}))
    received = []
    with pytest.raises(ConnectionClosed) as closed:
        while True:
            received.append(await recv(conn))

    assert closed.value.rcvd is not None and closed.value.rcvd.code == 4409
    cut = received[-1]
    assert cut["type"] == "slow_consumer"
    assert cut["runs"] == [
        {"run_id": run_id, "last_event_id": ids_of(received)[-1] if ids_of(received) else "0-0"}
    ]


async def test_a_browser_from_another_origin_is_refused(start_api: StartApi) -> None:
    api = await start_api()
    with pytest.raises(InvalidStatus) as refused:
        await api.ws(await api.key(), origin="https://evil.example")
    assert refused.value.response.status_code == 403


async def test_auth_by_first_frame_and_refusal_of_a_bad_key(start_api: StartApi) -> None:
    api = await start_api()
    key = await api.key()
    good = await api.ws(None)
    await good.send(json.dumps({"type": "auth", "api_key": key}))
    assert (await recv(good))["type"] == "ready"
    await good.send(json.dumps({"type": "ping", "request_id": "p"}))
    assert await recv(good) == {"type": "pong", "request_id": "p"}

    bad = await api.ws(None)
    await bad.send(json.dumps({"type": "auth", "api_key": key[:-3] + "xyz"}))
    error = await recv(bad)
    with pytest.raises(ConnectionClosed) as closed:
        await recv(bad)
    assert error["type"] == "request_error" and error["code"] == "unauthorized"
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 4401


async def test_frames_are_validated_and_size_limited(start_api: StartApi) -> None:
    api = await start_api(ws_max_frame_bytes=2048)
    conn = await api.ws(await api.key())

    await conn.send(json.dumps({"type": "join", "run_id": "bad id!"}))
    invalid = await recv(conn)
    await conn.send(json.dumps({"type": "resume", "run_id": "r1"}))  # no decision
    undecided = await recv(conn)
    await conn.send(json.dumps({"type": "ask", "question": "x" * 4000}))
    with pytest.raises(ConnectionClosed) as closed:
        await recv(conn)

    assert invalid["code"] == "invalid_request" and invalid["field"] == "run_id"
    assert undecided["code"] == "invalid_request" and undecided["field"] == "decision"
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 1009


async def test_an_idle_connection_is_closed(start_api: StartApi) -> None:
    api = await start_api(ws_idle_timeout_s=0.3)
    conn = await api.ws(await api.key())

    with pytest.raises(ConnectionClosed) as closed:
        await recv(conn, within=5)

    assert closed.value.rcvd is not None and closed.value.rcvd.code == 4408
