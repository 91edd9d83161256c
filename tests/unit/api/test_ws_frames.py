"""A websocket frame that fails validation names the field, whatever the frame's type."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import ValidationError

from api.http import ws_protocol as proto
from api.http.ws_session import frame_error

# One valid frame of every type the protocol has.
VALID: dict[str, dict[str, Any]] = {
    "auth": {"type": "auth", "api_key": "abk_0123456789ab_x"},
    "ask": {"type": "ask", "question": "q"},
    "join": {"type": "join", "run_id": "r1"},
    "cancel": {"type": "cancel", "run_id": "r1"},
    "resume": {"type": "resume", "run_id": "r1", "decision": "approve"},
    "ping": {"type": "ping"},
}


def _error(doc: dict[str, Any]) -> str | None:
    with pytest.raises(ValidationError) as e:
        proto.CLIENT_FRAME.validate_json(json.dumps(doc))
    return frame_error(e.value).field


def test_the_examples_cover_every_frame_type() -> None:
    assert set(VALID) == proto.FRAME_TYPES
    for doc in VALID.values():
        proto.CLIENT_FRAME.validate_json(json.dumps(doc))


@pytest.mark.parametrize("frame_type", sorted(VALID))
def test_an_unknown_field_is_named_without_the_frame_type(frame_type: str) -> None:
    assert _error({**VALID[frame_type], "bogus": 1}) == "bogus"


def test_a_resume_without_a_decision_names_the_decision() -> None:
    assert _error({"type": "resume", "run_id": "r1"}) == "decision"


def test_an_unknown_frame_type_names_the_type() -> None:
    assert _error({"type": "shout"}) == "type"
