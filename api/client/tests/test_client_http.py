"""The client's retry rules and error typing, against scripted HTTP answers (no server)."""

from __future__ import annotations

import email.utils
import time

import httpx
import pytest

from agentbus_client.errors import Conflict, ConnectionFailed, NotFound, RateLimited, error_from
from agentbus_client.http import RetryRules, retry_after, send

FAST = RetryRules(max_retries=2, backoff_s=0.001, max_wait_s=5)


def scripted(*answers: httpx.Response | Exception) -> tuple[httpx.AsyncClient, list[str]]:
    """A client whose requests get these answers in order; records the methods seen."""
    queue, seen = list(answers), list[str]()

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request.method)
        answer = queue.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    return httpx.AsyncClient(transport=httpx.MockTransport(handle)), seen


def error(status: int, code: str, **headers: str) -> httpx.Response:
    body = {"error": {"code": code, "message": code, "hint": "h"}}
    return httpx.Response(status, json=body, headers=headers)


async def test_a_429_is_retried_after_its_retry_after() -> None:
    http, seen = scripted(
        error(429, "rate_limited", **{"Retry-After": "1"}),
        httpx.Response(202, json={"ok": True}),
    )
    began = time.monotonic()
    response = await send(http, FAST, "POST", "http://api/x", repeatable=False)

    assert response.json() == {"ok": True} and seen == ["POST"] * 2
    assert time.monotonic() - began >= 0.95


def test_retry_after_reads_seconds_and_http_dates() -> None:
    later = email.utils.formatdate(time.time() + 30, usegmt=True)

    def of(value: str) -> float | None:
        return retry_after(httpx.Response(429, headers={"Retry-After": value}))

    assert of("7") == 7 and 28 <= (of(later) or 0) <= 30 and of("soon") is None


async def test_a_retry_after_past_the_limit_is_raised_at_once() -> None:
    http, seen = scripted(error(429, "too_many_active_runs", **{"Retry-After": "600"}))
    with pytest.raises(RateLimited) as raised:
        await send(http, FAST, "POST", "http://api/x", repeatable=True)
    assert raised.value.retry_after == 600 and raised.value.code == "too_many_active_runs"
    assert seen == ["POST"]


async def test_transient_failures_are_retried_only_when_repeating_is_safe() -> None:
    http, seen = scripted(error(503, "unavailable"), httpx.Response(200, json={}))
    await send(http, FAST, "GET", "http://api/x", repeatable=True)
    unsafe, unsafe_seen = scripted(error(503, "unavailable"))
    with pytest.raises(Exception) as raised:
        await send(unsafe, FAST, "POST", "http://api/x", repeatable=False)
    dropped, _ = scripted(*[httpx.ConnectError("refused")] * 3)
    with pytest.raises(ConnectionFailed):
        await send(dropped, FAST, "GET", "http://api/x", repeatable=True)

    assert seen == ["GET", "GET"] and unsafe_seen == ["POST"]
    assert raised.value.status == 503  # type: ignore[attr-defined]


def test_errors_are_typed_by_status_or_by_code() -> None:
    assert isinstance(error_from({"code": "run_not_found"}, 404), NotFound)
    assert isinstance(error_from({"code": "gate_conflict"}), Conflict)  # a websocket frame
    assert isinstance(error_from({"code": "conversation_not_found"}), NotFound)
