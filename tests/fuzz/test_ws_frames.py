"""Websocket frames over a real connection, mostly of the protocol's shape with hostile
values, some broken: each gets an answer (a coded ``request_error`` when it is refused),
the connection stays open and the API lives on."""

from __future__ import annotations

import itertools
import json
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from pydantic import ValidationError
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect

from api.http.ws_protocol import CLIENT_FRAME
from tests.fuzz.frames import FRAME_TEXTS
from tests.fuzz.system import FUZZ_EXAMPLES, System

pytestmark = [pytest.mark.connected, pytest.mark.timeout(FUZZ_EXAMPLES * 5 + 120)]

ANSWER_WITHIN_S = 15.0
_probes = itertools.count()
#: What the fuzzer saw, printed after the module (``-s``): frames sent, refusals by code.
SEEN: Counter[str] = Counter()


@pytest.fixture(scope="module", autouse=True)
def counts() -> Iterator[None]:
    """Print the counts when the module is done; most frames sent must be valid ones (a
    fuzzer whose frames are refused at validation never reaches what handles them)."""
    yield
    print(f"websocket frames: {dict(SEEN.most_common())}")
    if SEEN["frames sent"] >= 20:
        assert SEEN["valid frames sent"] > SEEN["frames sent"] / 2, dict(SEEN)


@pytest.fixture(scope="module")
def user_key(system: System) -> str:
    """A user's key of this module's own."""
    return system.key("t1", "ws-fuzzer")


@pytest.fixture
def ws(system: System, user_key: str) -> Iterator[ClientConnection]:
    """A websocket of the user, authenticated by its Authorization header."""
    url = system.base_url.replace("http://", "ws://") + "/api/v1/ws"
    headers = {"Authorization": f"Bearer {user_key}"}
    with connect(url, additional_headers=headers, max_size=None) as conn:
        ready = json.loads(conn.recv(timeout=ANSWER_WITHIN_S))
        assert ready["type"] == "ready"
        yield conn


def answers_until_pong(conn: ClientConnection, probe: str) -> list[dict[str, Any]]:
    """Every frame the server sends until the ``pong`` to our ping ``probe``."""
    conn.send(json.dumps({"type": "ping", "request_id": probe}))
    seen: list[dict[str, Any]] = []
    while True:
        frame = json.loads(conn.recv(timeout=ANSWER_WITHIN_S))
        assert isinstance(frame, dict) and isinstance(frame.get("type"), str), frame
        if frame["type"] == "pong" and frame.get("request_id") == probe:
            return seen
        seen.append(frame)


@settings(
    max_examples=FUZZ_EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(text=FRAME_TEXTS)
def test_any_frame_is_answered_and_the_connection_stays_open(
    ws: ClientConnection, system: System, text: str
) -> None:
    ws.send(text)
    try:
        frames = answers_until_pong(ws, f"probe-{next(_probes)}")
    except ConnectionClosed as e:  # pragma: no cover - what the fuzzer looks for
        pytest.fail(f"the server closed the connection after {text!r}: {e}")
    SEEN["frames sent"] += 1
    try:
        CLIENT_FRAME.validate_json(text)
        SEEN["valid frames sent"] += 1
    except ValidationError:
        pass
    for frame in frames:
        if frame["type"] == "request_error":
            assert frame.get("code") and isinstance(frame["code"], str), frame
            assert isinstance(frame.get("message"), str), frame
            SEEN[f"request_error {frame['code']}"] += 1
        elif frame["type"] == "accepted":
            SEEN["accepted (a run started)"] += 1
    assert system.dead() == []
