"""Requests the API fuzzers (tests/fuzz) found answered wrongly, each answered as documented."""

from __future__ import annotations

from typing import Any

import pytest

from bus.store import MAX_MESSAGE_ID, KeyRole, Scope

NOT_JSON = b"\xff\xfeq\x00{"  # not UTF-8, not JSON


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/api/v1/runs"),
        ("PUT", "/api/v1/settings"),
        ("PATCH", "/api/v1/conversations/c1"),
        ("POST", "/api/v1/sessions"),
    ],
)
async def test_a_body_that_is_not_json_is_a_coded_422_on_every_route(
    start_api: Any, method: str, path: str
) -> None:
    api = await start_api()
    headers = {**api.auth(await api.key(role=KeyRole.ADMIN)), "Content-Type": "application/json"}
    response = await api.http.request(method, path, content=NOT_JSON, headers=headers)
    assert response.status_code == 422, response.text
    assert response.json()["error"]["code"] == "invalid_request"
    assert response.json()["error"]["field"] == "body"


async def test_a2a_answers_a_body_that_is_not_utf8_with_a_json_rpc_parse_error(
    start_api: Any,
) -> None:
    api = await start_api()
    response = await api.http.post(
        "/a2a", content=NOT_JSON, headers={"Content-Type": "application/json"}
    )
    assert response.status_code == 200, response.text
    assert response.json()["error"]["code"] == -32700


async def test_a_message_id_past_the_id_column_is_a_422_and_names_no_message(
    start_api: Any,
) -> None:
    api = await start_api()
    owner = Scope.user("t1", "alice")
    await api.stores.conversations.ensure(owner, "c-big", "a title")
    too_big = MAX_MESSAGE_ID + 1  # SQLite cannot even compare with it (it was a 500)
    response = await api.http.put(
        "/api/v1/conversations/c-big/active",
        json={"message_id": too_big},
        headers=api.auth(await api.key()),
    )
    assert response.status_code == 422, response.text
    assert response.json()["error"]["field"] == "message_id"
    # Below the edge, the store answers "no such message" rather than failing.
    assert await api.stores.conversations.message(owner, "c-big", too_big) is None
    assert await api.stores.conversations.select_branch(owner, "c-big", too_big) is None
