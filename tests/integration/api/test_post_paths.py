"""``POST /api/v1/runs`` answers its common request on a path of its own
(`api.http.routes.runs`); every request answers the same either way.

A ``Content-Type`` with parameters is valid JSON to FastAPI and never the common path, so
each request below is sent both ways and the answers compared.
"""

from __future__ import annotations

from typing import Any

import httpx

from tests.integration.api.conftest import StartApi

COMMON = {"Content-Type": "application/json"}
DECLARED = {"Content-Type": "application/json; charset=utf-8"}


def _answer(resp: httpx.Response) -> tuple[int, list[str], Any]:
    """Status, header names in order, and the body without the ids drawn for the run."""
    names = [name for name, _ in resp.headers.multi_items() if name not in ("date", "server")]
    body = resp.json()
    if resp.status_code == 202:
        body = {k: v for k, v in body.items() if k not in ("run_id", "conversation_id")}
        body["events_url"] = body["events_url"].split("/")[-1]
    return resp.status_code, names, body


async def test_each_post_answers_the_same_on_the_common_path_and_the_declared_one(
    start_api: StartApi,
) -> None:
    api = await start_api()
    auth = api.auth(await api.key())
    bad = api.auth("abk_0123456789ab_nope")
    asks: list[tuple[dict[str, str], bytes]] = [
        (auth, b'{"question": "q", "settings": {"mode": "single"}}'),
        (auth | {"Idempotency-Key": "k" * 255}, b'{"question": "q"}'),
        (auth | {"Idempotency-Key": "k" * 256}, b'{"question": "q"}'),
        (auth, b'{"question": "q", "settings": {"mode": "x"}}'),
        (auth, b'{"question": "q", "extra": 1}'),
        (auth, b'{"question": ""}'),
        (auth, b'{"conversation_id": "../x", "question": "q"}'),
        (auth, b"{not json"),
        (auth, b"[]"),
        (auth, b""),
        ({}, b'{"question": "q"}'),
        (bad, b'{"question": "q"}'),
        (bad, b'{"nothing": 1}'),
    ]
    statuses: list[int] = []
    for headers, body in asks:  # a key of its own on each path: not a retry of the other
        common = await api.http.post("/api/v1/runs", content=body, headers=headers | COMMON)
        other = {k: v.replace("k", "j") if k.startswith("Idem") else v for k, v in headers.items()}
        declared = await api.http.post("/api/v1/runs", content=body, headers=other | DECLARED)
        assert _answer(common) == _answer(declared), (headers.keys(), body)
        statuses.append(common.status_code)
    assert statuses == [202, 202, 422, 422, 422, 422, 422, 422, 422, 422, 401, 401, 401]


async def test_a_retry_with_its_idempotency_key_on_either_path_finds_the_same_run(
    start_api: StartApi,
) -> None:
    api = await start_api()
    headers = api.auth(await api.key()) | {"Idempotency-Key": "order-7"}
    body = b'{"question": "q"}'

    first = await api.http.post("/api/v1/runs", content=body, headers=headers | COMMON)
    again = await api.http.post("/api/v1/runs", content=body, headers=headers | DECLARED)

    assert first.status_code == again.status_code == 202
    assert again.json()["run_id"] == first.json()["run_id"] and again.json()["replayed"]
    assert again.headers["location"] == first.headers["location"]
