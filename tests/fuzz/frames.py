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
#: Strings an attacker tries in any text field: injections, control and bidi characters,
#: a lone surrogate (valid JSON, not valid UTF-8), sizes at and past the limits.
HOSTILE_TEXT = st.one_of(
    st.sampled_from(
        [
            "'; DROP TABLE runs; --",
            '<script>alert("x")</script>',
            "{{7*7}}${7*7}",
            "${jndi:ldap://169.254.169.254/a}",
            "../../../../etc/passwd",
            "%s%n%x",
            "\u0000nul\u0000",
            "\u202eevil\u202c",
            "\ud800",
            "\U0001f600" * 50,
            "x" * 64,
            "x" * 65,
            "y" * 32_001,
        ]
    ),
    st.text(min_size=1, max_size=80),
)
#: Well-formed ids (they pass the pattern) that name nothing, or nothing of the caller's.
HOSTILE_ID = st.one_of(
    st.sampled_from(["0", "-", "_" * 64, "run-1", "00000000000000000000000000000000"]),
    _VALID_ID,
)
_MAX_INT = 2**63 - 1
HOSTILE_SETTINGS = st.fixed_dictionaries(
    {},
    optional={
        "mode": st.sampled_from(["single", "multi", "custom"]),
        "accuracy": st.sampled_from(["standard", "accurate"]),
        "think": st.booleans(),
        "use_tools": st.booleans(),
        "verifier_check": st.booleans(),
        "max_tool_hops": st.sampled_from([0, 1, 8]),
        "approve_high_risk": st.booleans(),
        "approve_critical": st.lists(
            st.sampled_from(["shell", "web_fetch", "calculator", "files__write"]), max_size=3
        ),
        "multitask": st.sampled_from(["enqueue", "reject", "interrupt", "rollback"]),
        "model": HOSTILE_TEXT,
        "token_budget": st.sampled_from([1, 2, 10**9, _MAX_INT]),
        "cost_budget_usd": st.sampled_from([0.0, 1e-12, 1e9]),
    },
)
_HOSTILE_FIELDS: dict[str, Any] = {
    "request_id": st.one_of(HOSTILE_TEXT.map(lambda t: t[:64]), st.none()),
}
#: Frames of every type the server accepts, shaped as the protocol says, carrying hostile
#: values: what a client that knows the protocol sends to break it.
HOSTILE_VALID_FRAMES = st.one_of(
    st.builds(
        _typed,
        st.just("ask"),
        st.fixed_dictionaries(
            {"question": HOSTILE_TEXT},
            optional={
                "conversation_id": HOSTILE_ID,
                "parent_message_id": st.sampled_from([0, 1, 2**53, _MAX_INT]),
                "settings": HOSTILE_SETTINGS,
                "webhook_url": st.sampled_from(
                    [
                        "http://169.254.169.254/latest/meta-data/",
                        "http://[::1]:6379/",
                        "http://127.0.0.1:6379/",
                        "file:///etc/passwd",
                        "https://example.com/" + "a" * 2000,
                    ]
                ),
                "webhook_approvals": st.booleans(),
                **_HOSTILE_FIELDS,
            },
        ),
    ),
    st.builds(
        _typed,
        st.just("join"),
        st.fixed_dictionaries(
            {"run_id": HOSTILE_ID},
            optional={
                "last_event_id": st.sampled_from(
                    ["0-0", "18446744073709551615-18446744073709551615", "99999999999999999999-1"]
                ),
                **_HOSTILE_FIELDS,
            },
        ),
    ),
    st.builds(
        _typed,
        st.sampled_from(["cancel", "resume"]),
        st.fixed_dictionaries(
            {"run_id": HOSTILE_ID},
            optional={
                "decision": st.one_of(_FIELDS["decision"], HOSTILE_TEXT.map(lambda t: t[:32])),
                "conversation_id": HOSTILE_ID,
                **_HOSTILE_FIELDS,
            },
        ),
    ),
    st.builds(_typed, st.just("auth"), st.fixed_dictionaries({"api_key": HOSTILE_TEXT})),
    st.builds(_typed, st.just("ping"), st.fixed_dictionaries({}, optional=_HOSTILE_FIELDS)),
)
#: Frames that are not what the protocol says: typed with random fields, any JSON, not JSON.
BROKEN_FRAME_TEXTS = st.one_of(
    VALID_FRAMES.map(json.dumps),
    TYPED_FRAMES.map(json.dumps),
    ANY_JSON.map(json.dumps),
    st.text(max_size=200),
    st.binary(max_size=100).map(lambda b: b.decode("latin-1")),
)
#: Text a websocket client may send: four times in five a frame of the protocol's shape
#: with hostile values, else a broken one.
FRAME_TEXTS = st.integers(min_value=0, max_value=4).flatmap(
    lambda i: BROKEN_FRAME_TEXTS if i == 4 else HOSTILE_VALID_FRAMES.map(json.dumps)
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
