"""Hypothesis strategies for what clients send: websocket frames and ``runs.questions``
entries, valid ones (as the AsyncAPI document describes them) and broken ones."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

from api.http.ws_protocol import FRAME_TYPES

JSON_LEAF = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=40),
)
#: Any JSON document.
ANY_JSON = st.recursive(
    JSON_LEAF,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=12), inner, max_size=4)
    ),
    max_leaves=12,
)
RUN_IDS = st.one_of(st.from_regex(r"\A[A-Za-z0-9_-]{1,64}\Z"), st.text(max_size=80), ANY_JSON)
SETTINGS = st.one_of(
    st.fixed_dictionaries(
        {},
        optional={
            "mode": st.sampled_from(["single", "multi", "custom", "bogus"]),
            "accuracy": st.sampled_from(["standard", "accurate", "x"]),
            "think": ANY_JSON,
            "use_tools": st.booleans(),
            "approve_high_risk": ANY_JSON,
            "approve_critical": st.lists(st.text(max_size=20), max_size=3),
            "multitask": st.sampled_from(["enqueue", "reject", "interrupt", "rollback", "?"]),
            "model": st.text(max_size=30),
            "token_budget": st.integers(min_value=-5, max_value=10**12),
        },
    ),
    ANY_JSON,
)
_FIELDS: dict[str, Any] = {
    "question": st.one_of(st.text(min_size=1, max_size=200), ANY_JSON),
    "conversation_id": RUN_IDS,
    "parent_message_id": st.one_of(st.integers(min_value=-3, max_value=2**64), ANY_JSON),
    "settings": SETTINGS,
    "webhook_url": st.one_of(
        st.sampled_from(["http://127.0.0.1/x", "https://example.com/h", "ftp://x", ""]),
        st.text(max_size=60),
    ),
    "webhook_approvals": ANY_JSON,
    "request_id": st.one_of(st.text(max_size=70), ANY_JSON),
    "run_id": RUN_IDS,
    "last_event_id": st.one_of(st.from_regex(r"\A\d{1,20}-\d{1,20}\Z"), st.text(max_size=30)),
    "decision": st.one_of(
        st.sampled_from(["approve", "reject", "egress_allow_once", "egress_deny"]),
        st.text(max_size=40),
    ),
    "api_key": st.text(max_size=60),
    "trace": ANY_JSON,
}


def _typed(kind: str, fields: dict[str, Any]) -> dict[str, Any]:
    return {"type": kind, **fields}


#: A frame of a known type with a random choice of (mostly plausible) fields.
TYPED_FRAMES = st.builds(
    _typed,
    st.sampled_from([*sorted(FRAME_TYPES), "hello", ""]),
    st.fixed_dictionaries({}, optional=_FIELDS),
)
_VALID_ID = st.from_regex(r"\A[A-Za-z0-9_-]{1,64}\Z")
#: Frames as the AsyncAPI document describes them (each type's required fields, valid).
VALID_FRAMES = st.one_of(
    st.builds(_typed, st.just("ask"), st.fixed_dictionaries({"question": st.text(min_size=1)})),
    st.builds(_typed, st.just("join"), st.fixed_dictionaries({"run_id": _VALID_ID})),
    st.builds(_typed, st.just("cancel"), st.fixed_dictionaries({"run_id": _VALID_ID})),
    st.builds(
        _typed,
        st.just("resume"),
        st.fixed_dictionaries({"run_id": _VALID_ID, "decision": _FIELDS["decision"]}),
    ),
    st.just({"type": "ping"}),
)
#: Text a websocket client may send: valid and typed frames, any JSON, not JSON at all.
FRAME_TEXTS = st.one_of(
    VALID_FRAMES.map(json.dumps),
    TYPED_FRAMES.map(json.dumps),
    ANY_JSON.map(json.dumps),
    st.text(max_size=200),
    st.binary(max_size=100).map(lambda b: b.decode("latin-1")),
)


def questions(api_key: str) -> st.SearchStrategy[dict[bytes, bytes]]:
    """``runs.questions`` entries: mostly a ``data`` field with a (broken) question, some
    with a reply stream, a few with other fields or bytes."""
    question = st.fixed_dictionaries(
        {},
        optional={
            "schema_version": st.sampled_from([1, 2, "1"]),
            "api_key": st.sampled_from([api_key, api_key[:-1] + "x", "short"]),
            "key_id": st.text(max_size=14),
            "signed_at": ANY_JSON,
            "question": _FIELDS["question"],
            "conversation_id": RUN_IDS,
            "run_id": RUN_IDS,
            "settings": SETTINGS,
            "reply_to": st.one_of(st.just("fuzz.replies"), st.text(max_size=30), ANY_JSON),
            "webhook_url": _FIELDS["webhook_url"],
            "trace": ANY_JSON,
        },
    )
    data = st.one_of(question.map(json.dumps), ANY_JSON.map(json.dumps), st.text(max_size=80))
    fields = st.one_of(
        data.map(lambda d: {b"data": d.encode()}),
        st.dictionaries(st.binary(min_size=1, max_size=10), st.binary(max_size=60), min_size=1),
    )
    return fields
